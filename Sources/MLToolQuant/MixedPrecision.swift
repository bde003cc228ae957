/// Spends a byte budget on the tensors that hurt most: palettized tensors are raised to more bits (4 → 6 → 8),
/// greedily by measured sensitivity per extra byte, until the next step no longer fits.
public enum MixedPrecision {
    public struct Candidate: Sendable {
        public var name: String
        public var elements: Int
        /// Look-up tables of the tensor (1 for a per-tensor palette).
        public var tables: Int
        /// How much the output moves when this tensor alone is quantized (e.g. mean KL on calibration images).
        public var sensitivity: Double

        public init(name: String, elements: Int, tables: Int, sensitivity: Double) {
            self.name = name; self.elements = elements; self.tables = tables; self.sensitivity = sensitivity
        }
    }

    /// Stored bytes of a palette: packed indices plus its tables (binary32 in base64, 4/3 of 4 bytes per entry).
    public static func paletteBytes(elements: Int, tables: Int, bits: Int) -> Int {
        (elements * bits + 7) / 8 + (tables * (1 << bits) * 16 + 2) / 3
    }

    /// Bit widths by tensor name (only the raised ones) whose extra bytes over `bits` stay within `room`. Each step
    /// of 2 bits is assumed to divide a tensor's sensitivity by 16 (12 dB less quantization noise).
    public static func allocate(_ candidates: [Candidate], bits: Int, room: Int) -> [String: Int] {
        var level = [String: Int](), left = room
        var sensitivity = Dictionary(candidates.map { ($0.name, $0.sensitivity) }, uniquingKeysWith: { a, _ in a })
        while true {
            var best: (gain: Double, name: String, to: Int, cost: Int)?
            for c in candidates {
                let now = level[c.name] ?? bits
                let to = QuantizeOptions.Mode.palette.nextBits(after: now)
                guard to <= 8 else { continue }
                let cost = paletteBytes(elements: c.elements, tables: c.tables, bits: to)
                    - paletteBytes(elements: c.elements, tables: c.tables, bits: now)
                guard cost > 0, cost <= left, let s = sensitivity[c.name], s > 0 else { continue }
                let gain = s * (1 - 1.0 / 16) / Double(cost)
                // Ties go to the earlier candidate, so the result does not depend on dictionary order.
                if let current = best, gain <= current.gain { continue }
                best = (gain, c.name, to, cost)
            }
            guard let b = best else { return level }
            level[b.name] = b.to
            left -= b.cost
            sensitivity[b.name] = (sensitivity[b.name] ?? 0) / 16
        }
    }
}
