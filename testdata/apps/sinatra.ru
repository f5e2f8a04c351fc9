# sinatra.ru — sinatra-app.rb under puma.
require_relative "sinatra-app"
run RbiSinatra
