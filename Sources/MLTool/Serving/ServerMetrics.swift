import Foundation

/// What `GET /metrics` reports, in Prometheus's text format (version 0.0.4): requests by status, a latency
/// histogram, batch sizes, queue depth and model load time. Updated from every server thread.
final class ServerMetrics: @unchecked Sendable {
    static let latencyBounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    static let batchBounds = [1.0, 2, 4, 8, 16, 32, 64, 128]

    struct Histogram {
        let bounds: [Double]
        var counts: [Int]
        var sum = 0.0, count = 0

        init(_ bounds: [Double]) { self.bounds = bounds; counts = Array(repeating: 0, count: bounds.count) }

        mutating func observe(_ v: Double) {
            for (i, b) in bounds.enumerated() where v <= b { counts[i] += 1 }
            sum += v; count += 1
        }

        func text(_ name: String, labels: String = "") -> String {
            let sep = labels.isEmpty ? "" : labels + ","
            var s = ""
            for (b, c) in zip(bounds, counts) { s += "\(name)_bucket{\(sep)le=\"\(b)\"} \(c)\n" }
            s += "\(name)_bucket{\(sep)le=\"+Inf\"} \(count)\n"
            let plain = labels.isEmpty ? "" : "{\(labels)}"
            return s + "\(name)_sum\(plain) \(sum)\n\(name)_count\(plain) \(count)\n"
        }
    }

    private let lock = NSLock()
    private var requests: [Int: Int] = [:]
    private var latency = Histogram(latencyBounds)
    private var batches: [String: Histogram] = [:]
    private var loadSeconds: [String: Double] = [:]
    private var reloads: [String: Int] = [:]

    /// The requests answered so far, by HTTP status.
    var answered: [Int: Int] { lock.withLock { requests } }

    func request(status: Int, seconds: Double) {
        lock.withLock { requests[status, default: 0] += 1; latency.observe(seconds) }
    }

    func batch(model: String, size: Int) {
        lock.withLock { batches[model, default: Histogram(Self.batchBounds)].observe(Double(size)) }
    }

    func loaded(model: String, seconds: Double) { lock.withLock { loadSeconds[model] = seconds } }

    /// A reload from disk: `result` "ok" or "failed" (the old model keeps answering).
    func reloaded(model: String, result: String) { lock.withLock { reloads["model=\"\(model)\",result=\"\(result)\"", default: 0] += 1 } }

    /// The exposition text; `queues`: inputs waiting per model now.
    func text(queues: [String: Int]) -> String {
        lock.withLock {
            var s = "# HELP mltool_requests_total HTTP requests answered, by status.\n# TYPE mltool_requests_total counter\n"
            for (status, n) in requests.sorted(by: { $0.key < $1.key }) { s += "mltool_requests_total{status=\"\(status)\"} \(n)\n" }
            s += "# HELP mltool_request_seconds Time from a request's body to its answer.\n# TYPE mltool_request_seconds histogram\n"
            s += latency.text("mltool_request_seconds")
            s += "# HELP mltool_batch_size Inputs per engine batch.\n# TYPE mltool_batch_size histogram\n"
            for (model, h) in batches.sorted(by: { $0.key < $1.key }) { s += h.text("mltool_batch_size", labels: "model=\"\(model)\"") }
            s += "# HELP mltool_queue_depth Inputs waiting for a batch.\n# TYPE mltool_queue_depth gauge\n"
            for (model, n) in queues.sorted(by: { $0.key < $1.key }) { s += "mltool_queue_depth{model=\"\(model)\"} \(n)\n" }
            s += "# HELP mltool_model_load_seconds Time to load and prepare each model.\n# TYPE mltool_model_load_seconds gauge\n"
            for (model, t) in loadSeconds.sorted(by: { $0.key < $1.key }) { s += "mltool_model_load_seconds{model=\"\(model)\"} \(t)\n" }
            s += "# HELP mltool_model_reloads_total Models reloaded from disk (--watch), by result.\n# TYPE mltool_model_reloads_total counter\n"
            for (labels, n) in reloads.sorted(by: { $0.key < $1.key }) { s += "mltool_model_reloads_total{\(labels)} \(n)\n" }
            return s
        }
    }
}
