import Testing
@testable import MLToolFormat

/// Reference values from the xxHash reference implementation (python-xxhash 3.x, `xxh64(data, seed=0)`).
@Suite struct XXH64Tests {
    static let vectors: [([UInt8], UInt64)] = [
        ([], 0xEF46_DB37_51D8_E999),
        (Array("a".utf8), 0xD24E_C4F1_A98C_6E5B),
        (Array("abc".utf8), 0x44BC_2CF5_AD77_0999),
        (Array("Nobody inspects the spammish repetition".utf8), 0xFBCE_A83C_8A37_8BF1),
        ((0..<100).map { UInt8($0) }, 0x6AC1_E580_3216_6597),
        ((0..<1000).map { UInt8(($0 * 7) % 256) }, 0x2527_5608_A9CF_C168),
    ]

    @Test(arguments: vectors)
    func knownVectors(input: [UInt8], expected: UInt64) {
        #expect(XXH64.hash(input) == expected)
    }

    @Test func everyLengthUpTo64DiffersFromItsNeighbours() {
        // Covers each tail path (8-byte words, a 4-byte word, single bytes) with and without 32-byte stripes.
        let data = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let hashes = (0...64).map { XXH64.hash(Array(data[0..<$0])) }
        #expect(Set(hashes).count == hashes.count)
    }
}
