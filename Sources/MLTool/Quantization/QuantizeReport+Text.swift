import Foundation
import MLToolQuant

extension QuantizeReport {
    /// The report as `mltool quantize` prints it: a table of tensors, sizes, calibration and the gate.
    public var text: String {
        var s = "\(model) → \(output) (\(mode), \(bits) bits\(table.map { ", \($0) tables" } ?? ""))\n"
        let width = min(48, max(12, tensors.map { $0.name.count }.max() ?? 0))
        s += "  " + "tensor".padding(toLength: width, withPad: " ", startingAt: 0) + "  elements  bits      bytes before → after     SNR dB  cosine\n"
        for t in tensors {
            let name = t.name.count > width ? "…" + t.name.suffix(width - 1) : t.name
            s += "  " + name.padding(toLength: width, withPad: " ", startingAt: 0)
            if let why = t.skipped {
                s += String(format: "  %8d  skipped: %@\n", t.elements, why)
            } else {
                s += String(format: "  %8d  %4d  %10d → %-10d  %6@  %6@\n", t.elements, t.bits, t.bytesBefore, t.bytesAfter,
                            t.snrDB.map { String(format: "%.1f", $0) } ?? "exact", t.cosine.map { String(format: "%.4f", $0) } ?? "-")
            }
        }
        let before = tensors.reduce(0) { $0 + $1.bytesBefore }, after = tensors.reduce(0) { $0 + $1.bytesAfter }
        s += "  weights \(before) → \(after) bytes; file \(fileBytesBefore) → \(fileBytesAfter) bytes ("
            + String(format: "%.1f%%", Double(fileBytesAfter) / Double(max(fileBytesBefore, 1)) * 100) + " of the original)\n"
        if let c = calibration { s += "  calibration on \(c)\n" }
        if let m = mixedPrecision { s += "  mixed precision: \(m)\n" }
        if let g = gate {
            let left = g.calibrationLeftOut > 0 ? " (\(g.calibrationLeftOut) calibration images left out)" : ""
            s += String(format: "  %@ on %d %@%@: float %.4f, quantized %.4f (%+.2f points)", g.metric, g.items,
                        g.metric == "token accuracy" ? "tokens" : "items", left, g.floatAccuracy, g.quantizedAccuracy,
                        (g.quantizedAccuracy - g.floatAccuracy) * 100)
            if let a = g.agreement, let kl = g.meanKL { s += String(format: "; top-1 agreement %.4f; mean KL %.5f", a, kl) }
            if let f = g.floatMAP50to95, let q = g.quantizedMAP50to95 { s += String(format: "; mAP@0.5:0.95 %.4f → %.4f", f, q) }
            s += "\n"
            if !g.backedOff.isEmpty {
            s += "  backed off \(g.backedOff.count) tensors (\(g.backOffOrder ?? "worst first")): " + g.backedOff.prefix(6).joined(separator: ", ")
                    + (g.backedOff.count > 6 ? ", …" : "") + "\n"
            }
        }
        return s
    }
}
