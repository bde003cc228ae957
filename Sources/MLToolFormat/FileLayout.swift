import MLToolCore

/// Where the sections of a model file lie and how many tensor bytes each dtype takes (for `mltool info`).
public struct FileLayout: Sendable, Equatable {
    /// One section: "header", "metadata", "data" or "trailer". Zero padding between metadata and data is not listed.
    public struct Section: Sendable, Equatable {
        public var name: String
        public var offset: Int
        public var length: Int
        public init(name: String, offset: Int, length: Int) { self.name = name; self.offset = offset; self.length = length }
    }

    /// The sections in file order.
    public var sections: [Section]
    /// Tensor bytes per dtype (without alignment padding); only dtypes that occur.
    public var bytesPerDType: [DType: Int]
    /// The file's size in bytes.
    public var fileSize: Int

    public init(sections: [Section], bytesPerDType: [DType: Int], fileSize: Int) {
        self.sections = sections; self.bytesPerDType = bytesPerDType; self.fileSize = fileSize
    }
}
