# sinatra-app.rb — a Sinatra application (Debian's ruby-sinatra), as a test target: a JSON page
# built from many small objects (which also leaves RbiKeep garbage behind), a page that
# computes, and a page that sleeps in the database's stead.  Served by puma in single mode
# (puma-single.rb, sinatra.ru) for tests/integration/apps.sh.
#
# env: RBI_APP_TRUTH (truth-trap.rb).
require "json"
require "sinatra/base"
require_relative "truth-trap"

CATALOG = Array.new(50) { |i| { id: i, name: "item #{i}", tags: %w[a b c].map { |t| "#{t}#{i}" } } }
RbiTrap.exprs["CATALOG.length"] = CATALOG.length.inspect
RbiTrap.exprs["CATALOG[3].class"] = CATALOG[3].class.name

class RbiSinatra < Sinatra::Base
  set :logging, false
  set :host_authorization, { permitted_hosts: [] } if settings.respond_to?(:host_authorization)

  get "/items" do
    RbiKeep.churn
    content_type :json
    CATALOG.map { |item| item.merge(score: item[:tags].sum(&:size)) }.to_json
  end

  get "/work" do
    (1..20_000).reduce(0) { |a, i| a + i.to_s.size }.to_s
  end

  get "/slow" do
    sleep 0.05
    "slow"
  end
end
