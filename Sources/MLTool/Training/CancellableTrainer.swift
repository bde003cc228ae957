/// A task's trainer: `train(progress:cancellation:)` on the calling thread, and the same as an `async` call that runs on
/// a thread of its own and stops at the trainer's next check (batch, block or stage) when its task is cancelled.
public protocol CancellableTrainer: Sendable {
    func train(progress: ((PipelineEvent) -> Void)?, cancellation: Cancellation) throws -> TrainingResult
}

extension CancellableTrainer {
    /// Trains on a thread of its own; cancelling the calling task stops it with `CancellationError`.
    public func train(progress: (@Sendable (PipelineEvent) -> Void)? = nil) async throws -> TrainingResult {
        let trainer = self
        return try await Cancellation.run { token in try trainer.train(progress: progress, cancellation: token) }
    }
}
