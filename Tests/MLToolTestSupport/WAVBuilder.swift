/// A WAV file built byte by byte: RIFF header, a 16-byte 'fmt ' chunk, a 'data' chunk (sizes as given, so a test can
/// make them lie).
public struct WAVBuilder {
    public var formatTag: UInt16 = 1
    public var channels: UInt16 = 1
    public var rate: UInt32 = 8000
    public var bits: UInt16 = 16
    public var samples: [Int16] = []
    public var riffSize: UInt32?
    public var dataSize: UInt32?
    public var cutAt: Int?

    public init(formatTag: UInt16 = 1, channels: UInt16 = 1, rate: UInt32 = 8000, bits: UInt16 = 16, samples: [Int16] = [],
                riffSize: UInt32? = nil, dataSize: UInt32? = nil, cutAt: Int? = nil) {
        self.formatTag = formatTag; self.channels = channels; self.rate = rate; self.bits = bits; self.samples = samples
        self.riffSize = riffSize; self.dataSize = dataSize; self.cutAt = cutAt
    }

    public var bytes: [UInt8] {
        var b = [UInt8]()
        func u16(_ v: UInt16) { b += [UInt8(v & 0xff), UInt8(v >> 8)] }
        func u32(_ v: UInt32) { u16(UInt16(v & 0xffff)); u16(UInt16(v >> 16)) }
        let block = channels * bits / 8
        let data = UInt32(samples.count * 2)
        b += Array("RIFF".utf8); u32(riffSize ?? 36 + data); b += Array("WAVE".utf8)
        b += Array("fmt ".utf8); u32(16); u16(formatTag); u16(channels); u32(rate); u32(rate * UInt32(block)); u16(block); u16(bits)
        b += Array("data".utf8); u32(dataSize ?? data)
        for s in samples { u16(UInt16(bitPattern: s)) }
        return cutAt.map { Array(b.prefix($0)) } ?? b
    }
}
