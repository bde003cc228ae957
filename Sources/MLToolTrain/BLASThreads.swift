import COpenBLAS

/// OpenBLAS's thread count for the code above MLToolTrain, which imports no C library.
public enum BLASThreads {
    /// Sets OpenBLAS's threads (0: its default, every core).
    public static func set(_ count: Int) { openblas_set_num_threads(Int32(clamping: count)) }
}
