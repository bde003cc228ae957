import Foundation

/// The SIMD-level tests (MLToolEngineTests' `forEachCPULevel`) switch the process-wide kernel level, and every test
/// target runs in the one test process: a test anywhere that compares two results bit for bit, both computed by
/// kernels that pick their code by that level (the engine, the training kernels at level -1), holds this shared so
/// the switch cannot fall between them; the switching tests hold it exclusively.
public final class KernelLevelLock: @unchecked Sendable {
    public static let shared = KernelLevelLock()
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    private init() {
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    public func reading<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock); defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    public func writing<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock); defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
