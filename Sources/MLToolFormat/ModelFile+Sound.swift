import MLToolCore

extension ModelFile {
    /// A sound classifier's `sound` object and graph (docs/FORMAT.md section 4.7 and rule 16).
    static func validateSound(_ m: ModelMetadata, file: String) throws {
        func bad(_ field: String, _ reason: String) -> FormatError {
            .badGraph(file: file, node: "sound", field: field, reason: reason)
        }
        guard m.task == .soundClassifier else {
            if m.sound != nil { throw bad("sound", "present for task \(m.task.rawValue)") }
            return
        }
        guard let c = m.sound else { throw bad("sound", "missing for task soundClassifier") }
        guard c.frontEnd == SoundConfig.speechMel else { throw bad("frontEnd", "'\(c.frontEnd)'; expected \(SoundConfig.speechMel)") }
        guard c.sampleRate == 16000 else { throw bad("sampleRate", "\(c.sampleRate); expected 16000 for \(c.frontEnd)") }
        let (longest, overflow) = c.sampleRate.multipliedReportingOverflow(by: 3600)
        guard !overflow, (1272...longest).contains(c.minimumSamples) else {
            throw bad("minimumSamples", "\(c.minimumSamples); expected 1272…\(longest)")
        }
        guard c.overlap >= 0, c.overlap < 1 else { throw bad("overlap", "\(c.overlap); expected 0 ≤ overlap < 1") }
        guard let g = m.graph else { throw bad("graph", "missing for task soundClassifier") }
        guard g.inputs.count == 1, let input = g.inputs.first else { throw bad("graph.inputs", "\(g.inputs.count) inputs; expected 1") }
        guard input.shape == [-1, 76, 32, 1] else { throw bad("graph.inputs[0].shape", "\(input.shape); expected [-1, 76, 32, 1]") }
        guard g.outputs == ["probabilities"] else { throw bad("graph.outputs", "\(g.outputs); expected [\"probabilities\"]") }
        guard m.labels.count >= 2 else { throw bad("labels", "\(m.labels.count) labels; need at least 2") }
        var seen = Set<String>()
        for label in m.labels where !seen.insert(label).inserted { throw bad("labels", "'\(label)' occurs twice") }
    }
}
