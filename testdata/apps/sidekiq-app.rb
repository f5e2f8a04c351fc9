# sidekiq-app.rb — a Sidekiq application (Debian's ruby-sidekiq, on redis-server), as a test
# target: a job that builds a report from many small objects (leaving RbiKeep garbage behind)
# and computes.  Sidekiq runs it with `sidekiq -r sidekiq-app.rb -c 5`, its 5 processor
# threads fed from redis; tests/integration/apps.sh enqueues with `ruby sidekiq-app.rb N`.
# Sidekiq 6.4 (bookworm, on the redis gem) and 7.3 (trixie, on redis-client) alike.
#
# env: RBI_REDIS_SOCK (redis-server's unix socket), RBI_APP_TRUTH (truth-trap.rb).
require "sidekiq"
# The redis gem 4.8 warns at every call Sidekiq 6.4 makes; Sidekiq 7 has no Redis.
Redis.silence_deprecations = true if defined?(Redis) && Redis.respond_to?(:silence_deprecations=)
require_relative "truth-trap"

redis = { path: ENV.fetch("RBI_REDIS_SOCK") }
Sidekiq.configure_server { |config| config.redis = redis }
Sidekiq.configure_client { |config| config.redis = redis }

class RbiReportJob
  include Sidekiq::Job
  LINES = 40

  def perform(id)
    RbiKeep.churn
    lines = Array.new(LINES) { |i| "report #{id} line #{i}: #{(1..200).sum { |k| k * i }}" }
    lines.sum(&:size)
  end
end
RbiTrap.exprs["Sidekiq::VERSION"] = Sidekiq::VERSION.inspect
RbiTrap.exprs["RbiReportJob::LINES"] = RbiReportJob::LINES.inspect

# `ruby sidekiq-app.rb N`: enqueue N jobs, as a web process would.
Sidekiq::Client.push_bulk("class" => RbiReportJob, "args" => Array.new(Integer(ARGV[0])) { |i| [i] }) if $PROGRAM_NAME == __FILE__
