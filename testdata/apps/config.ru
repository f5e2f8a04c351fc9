# config.ru — rails-app.rb under puma.
require_relative "rails-app"
run RbiApp
