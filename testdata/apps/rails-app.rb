# rails-app.rb — a Rails 6.1 application in one file (Debian's ruby-rails), as a test target:
# ActiveRecord on sqlite3 with an N+1 query page (which also leaves RbiKeep garbage behind), a
# page that computes, and a page that leaks.  Served by puma (puma.rb, config.ru) for tests/integration/apps.sh.
#
# env: RBI_APP_DIR (the database and logs go there), RBI_APP_TRUTH (truth-trap.rb).
require "rails"
require "active_record/railtie"
require "action_controller/railtie"
require "sqlite3"
require_relative "truth-trap"

ENV["DATABASE_URL"] ||= "sqlite3:#{File.join(ENV.fetch("RBI_APP_DIR"), "app.db")}?pool=8"

class RbiApp < Rails::Application
  config.root = __dir__
  config.eager_load = true
  config.logger = Logger.new(File.join(ENV.fetch("RBI_APP_DIR"), "rails.log"))
  config.log_level = :warn
  config.secret_key_base = "0" * 64
  config.hosts.clear
  config.active_support.deprecation = :silence
end

RbiApp.initialize!
ActiveRecord::Schema.verbose = false
ActiveRecord::Schema.define do
  create_table :posts, force: true do |t|
    t.string :title
    t.text :body
  end
  create_table :comments, force: true do |t|
    t.integer :post_id
    t.string :body
  end
end

class Post < ActiveRecord::Base
  has_many :comments
end

class Comment < ActiveRecord::Base
  belongs_to :post
end

20.times do |i|
  post = Post.create!(title: "post #{i}", body: "body " * 50)
  5.times { |k| post.comments.create!(body: "comment #{k} of #{i}") }
end

LEAKED = []
# A record for p to step into (FIRST_POST.@attributes...), and what the app says of it.
FIRST_POST = Post.first
RbiTrap.exprs["FIRST_POST.@attributes.class"] = FIRST_POST.instance_variable_get(:@attributes).class.name
RbiTrap.exprs["FIRST_POST.@new_record"] = FIRST_POST.instance_variable_get(:@new_record).inspect

class PostsController < ActionController::Base
  # N+1: a query per post for its comments.
  def index
    RbiKeep.churn
    render json: Post.all.map { |p| { title: p.title, comments: p.comments.map(&:body) } }
  end

  def work
    render plain: (1..20_000).reduce(0) { |a, i| a + i.to_s.size }.to_s
  end

  def leak
    LEAKED << Post.first.attributes.merge(at: Time.now.to_f)
    render plain: LEAKED.size.to_s
  end
end

RbiApp.routes.draw do
  get "/posts" => "posts#index"
  get "/work" => "posts#work"
  get "/leak" => "posts#leak"
end
