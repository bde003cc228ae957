import Foundation

extension GraphInput {
    /// The shape a declared input is run at when no value is given (`mltool bench`, the engine fuzz target): a free
    /// leading dimension as `batch`, any other dimension below 1 as 1. Whatever a file declares (negative, huge,
    /// overflowing), the element count is overflow-checked and its floats must fit in this machine's memory, so
    /// nothing that size is allocated before the check (an allocation that fails ends the process).
    public func runShape(batch: Int, file: String) throws -> (shape: [Int], count: Int) {
        let shape = shape.enumerated().map { $0.offset == 0 && $0.element < 0 ? batch : max($0.element, 1) }
        let count = try Checked.elementCount(shape, file: file, what: "graph input '\(name)'")
        let bytes = count.multipliedReportingOverflow(by: MemoryLayout<Float>.size)
        let available = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        guard !bytes.overflow, bytes.partialValue <= available else {
            throw CoreError.invalidValue(file: file, offset: nil, what: "graph input '\(name)' of shape \(shape)",
                                         expected: "floats that fit in this machine's \(available >> 20) MiB of memory",
                                         actual: "\(count) elements")
        }
        return (shape, count)
    }
}
