import Dispatch
import Foundation
import MLToolCore
import MLToolData
import MLToolEval

/// Trains a `WordTagger` on tagged sentences, in named stages:
///
/// 1. `split`: the validation sentences (a corpus given, or a seeded share of the training sentences);
/// 2. `lexicon`: the tags each word was seen with (per training sentence without its own fold's sentences);
/// 3. `features`: every word's feature keys, numbered in one index (training) or looked up in it (validation);
/// 4. `fit`: averaged-perceptron epochs, keeping the epoch with the best validation accuracy;
/// 5. `assemble`: keys sorted, never-updated features dropped, the tokenizer learned from the training words.
///
/// The same data, parameters and seed give the same model, bit for bit, on any number of threads.
public struct WordTaggerTrainer {
    public let parameters: WordTaggerParameters

    public init(parameters: WordTaggerParameters = WordTaggerParameters()) throws {
        try parameters.validate()
        self.parameters = parameters
    }

    /// What training produced: the tagger and the record of its epochs.
    public struct Result: Sendable {
        public var tagger: WordTagger
        public var epochs: [TaggerEpoch]
        /// The epoch whose averaged weights the tagger holds.
        public var chosenEpoch: Int
        public var trainSentences: Int
        public var validationSentences: Int
        /// Distinct features in the training words (before dropping the ones never updated).
        public var featureRows: Int
        /// Seconds per stage ("lexicon", "features", "fit", "assemble").
        public var timings: [String: Double]
    }

    /// Trains on `corpus`; `validation` replaces the split taken from it; `unlabeled` sentences (tokens) give the
    /// words their Brown clusters (`parameters.wordClusters`; none without them); `gazetteer` marks the words of known
    /// names in the lexicon. `progress` is called after every epoch; what it throws (a cancellation) stops the training.
    public func train(_ corpus: TaggedCorpus, validation: TaggedCorpus? = nil, unlabeled: [[String]] = [],
                      gazetteer: TaggerGazetteer? = nil,
                      progress: (@Sendable (TaggerEpoch) throws -> Void)? = nil) throws -> Result {
        let started = Date()
        let clusters = unlabeled.isEmpty ? [:]
            : BrownClustering(clusters: parameters.wordClusters, minCount: parameters.clusterMinCount)
                .paths(unlabeled.map { $0.map { $0.lowercased() } })
        let clustering = Date().timeIntervalSince(started)
        let (train, held) = try split(corpus, validation: validation)
        let tags = TaggedCorpus(source: corpus.source, format: corpus.format, sentences: train).tags
        guard tags.count >= 2 else {
            throw TaggerError.unusableData(source: corpus.source, reason: "found \(tags.count) tag\(tags.count == 1 ? "" : "s") (\(tags.joined(separator: ", "))); need at least 2")
        }
        if gazetteer != nil && tags.count > TaggerGazetteer.maxTags {
            throw TaggerError.unusableData(source: corpus.source, reason: "\(tags.count) tags: a gazetteer takes at most \(TaggerGazetteer.maxTags)")
        }
        let extras = try Self.extras(clusters: clusters, gazetteer: gazetteer)
        let tagIndex = Dictionary(uniqueKeysWithValues: tags.enumerated().map { ($1, Int32($0)) })
        var timings: [String: Double] = ["clusters": clustering]
        var lap = Date()
        func phase(_ name: String) { let now = Date(); timings[name] = now.timeIntervalSince(lap); lap = now }
        var trainWords = Self.intern(train, lexicon: .empty)
        let lexicon = Self.lexicon(train, trainWords, tagIndex: tagIndex, folds: parameters.lexiconFolds, extras: extras,
                                   names: gazetteer != nil)
        for i in trainWords.words.indices { lexicon.final.annotate(&trainWords.words[i]) }
        phase("lexicon")
        var index = FeatureIndex(expected: 1)
        var counts: [Int32] = []
        let trainDesign = Self.design(train, trainWords, tagIndex: tagIndex, masks: lexicon.trainingMasks, frozen: nil,
                                      index: &index, occurrences: &counts, context: gazetteer != nil)
        var unused = FeatureIndex(expected: 1), unusedCounts: [Int32] = []
        let heldDesign = held.isEmpty ? nil
            : Self.design(held, Self.intern(held, lexicon: lexicon.final), tagIndex: tagIndex, masks: nil,
                          frozen: index, index: &unused, occurrences: &unusedCounts, context: gazetteer != nil)
        phase("features")
        var design = trainDesign
        if parameters.minFeatureCount > 1 { design = Self.prune(design, counts: counts, minimum: parameters.minFeatureCount) }

        // Fit.
        var trainer = PerceptronTrainer(rows: index.count, tags: tags.count)
        var rng = SplitMix64(seed: parameters.seed)
        var order = Array(0..<design.sentenceCount)
        var history: [TaggerEpoch] = []
        var best: (epoch: Int, accuracy: Double, weights: [Float], transitions: [Float])?
        for epoch in 1...parameters.epochs {
            order.seededShuffle(&rng)
            let correct = trainer.epoch(design, order: order)
            let averaged = trainer.averaged()
            var validationAccuracy: Double?
            if let heldDesign {
                validationAccuracy = Self.accuracy(heldDesign, weights: averaged.weights,
                                                   transitions: averaged.transitions, tags: tags.count)
            }
            let record = TaggerEpoch(epoch: epoch, trainAccuracy: Double(correct) / Double(max(design.wordCount, 1)),
                                     validationAccuracy: validationAccuracy,
                                     seconds: Date().timeIntervalSince(started))
            history.append(record)
            try progress?(record)
            let score = validationAccuracy ?? Double(epoch)
            if best == nil || score > best!.accuracy {
                best = (epoch, score, averaged.weights, averaged.transitions)
            } else if let p = parameters.patience, validationAccuracy != nil, epoch - best!.epoch >= p {
                break
            }
        }
        guard let chosen = best else {
            throw TaggerError.unusableData(source: corpus.source, reason: "no epoch ran")
        }
        phase("fit")
        let tagger = try assemble(tags: tags, index: index, weights: chosen.weights, transitions: chosen.transitions,
                                  lexicon: lexicon.final, training: train)
        phase("assemble")
        return Result(tagger: tagger, epochs: history, chosenEpoch: chosen.epoch, trainSentences: train.count,
                      validationSentences: held.count, featureRows: index.count, timings: timings)
    }

    // MARK: stages

    /// Training and validation sentences.
    func split(_ corpus: TaggedCorpus, validation: TaggedCorpus?) throws -> ([TaggedSentence], [TaggedSentence]) {
        if let validation { return (corpus.sentences, validation.sentences) }
        let n = corpus.sentences.count
        let fraction = parameters.validation.fraction(count: n)
        let take = min(Int((Double(n) * fraction).rounded()), max(n - 1, 0))
        let (rest, held) = SeededSplit.indices(count: n, taking: take, seed: parameters.seed &+ 1)
        return (rest.map { corpus.sentences[$0] }, held.map { corpus.sentences[$0] })
    }

    /// Sentences with their words interned: every distinct form once, as a `TaggerWord`.
    struct Interned {
        var words: [TaggerWord] = []
        /// Form id of every word of every sentence, in order.
        var ids: [Int32] = []
        var sentenceOffsets = [0]
    }

    /// Interns the words of `sentences`, annotating each new form with `lexicon`.
    static func intern(_ sentences: [TaggedSentence], lexicon: TaggerLexicon) -> Interned {
        var out = Interned()
        var forms: [String: Int32] = [:]
        for s in sentences {
            for w in s.tokens {
                if let id = forms[w] { out.ids.append(id); continue }
                let id = Int32(out.words.count)
                var word = TaggerWord(w)
                lexicon.annotate(&word)
                out.words.append(word)
                forms[w] = id
                out.ids.append(id)
            }
            out.sentenceOffsets.append(out.ids.count)
        }
        return out
    }

    /// The tag sets of training words: per training word, the tags its lower-case form had in the other folds'
    /// sentences (sentence s is in fold s mod `folds`), and for the model the tags over all training sentences and
    /// the cluster and gazetteer bits (`extras`) of every word in it or in `extras`.
    static func lexicon(_ sentences: [TaggedSentence], _ interned: Interned, tagIndex: [String: Int32],
                        folds: Int, extras: [UInt64: Extra] = [:], names: Bool = false) -> (trainingMasks: [UInt32], final: TaggerLexicon) {
        var types = FeatureIndex(expected: 1 << 15)
        var typeOfForm: [Int32] = []
        var typeKeys: [UInt64] = []
        for w in interned.words {
            let (r, isNew) = types.insert(w.lower)
            if isNew { typeKeys.append(w.lower) }
            typeOfForm.append(r)
        }
        let t = tagIndex.count, typeCount = types.count
        var total = [Int32](repeating: 0, count: typeCount * t)
        var byFold = [Int32](repeating: 0, count: folds * typeCount * t)
        var k = 0
        for (si, s) in sentences.enumerated() {
            let fold = si % folds
            for tag in s.tags {
                let y = Int(tagIndex[tag] ?? 0), w = Int(typeOfForm[Int(interned.ids[k])])
                total[w * t + y] += 1
                byFold[(fold * typeCount + w) * t + y] += 1
                k += 1
            }
        }
        func mask(_ counts: (Int) -> Int32) -> UInt32 {
            var m: UInt32 = 0
            for y in 0..<min(t, 31) where counts(y) > 0 { m |= 1 << UInt32(y) }
            return m
        }
        var masks: [UInt32] = []
        masks.reserveCapacity(interned.ids.count)
        for si in 0..<sentences.count {
            let fold = si % folds
            for k in interned.sentenceOffsets[si]..<interned.sentenceOffsets[si + 1] {
                let w = Int(typeOfForm[Int(interned.ids[k])])
                masks.append(mask { total[w * t + $0] - byFold[(fold * typeCount + w) * t + $0] })
            }
        }
        var keys = typeKeys, finalMasks = (0..<typeCount).map { w in mask { total[w * t + $0] } }
        var paths = [UInt32](repeating: 0, count: typeCount)
        for (key, extra) in extras.sorted(by: { $0.key < $1.key }) {
            let (r, isNew) = types.insert(key)
            if isNew {
                keys.append(key); finalMasks.append(extra.mask); paths.append(extra.cluster)
            } else {
                finalMasks[Int(r)] |= extra.mask; paths[Int(r)] = extra.cluster
            }
        }
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        let final = TaggerLexicon(keys: order.map { keys[$0] }, masks: order.map { finalMasks[$0] },
                                  clusters: order.map { paths[$0] }, namesInMasks: names, context: names)
        return (masks, final)
    }

    /// What the lexicon knows of a word besides its training tags: gazetteer bits and cluster path.
    struct Extra { var mask: UInt32 = 0; var cluster: UInt32 = 0 }

    /// Cluster paths (lower-case words) and gazetteer bits by lower-case word hash.
    static func extras(clusters: [String: UInt32], gazetteer: TaggerGazetteer?) throws -> [UInt64: Extra] {
        var out: [UInt64: Extra] = [:]
        for (word, path) in clusters { out[TaggerWord(word).lower, default: Extra()].cluster = path }
        for (key, bits) in try gazetteer?.bits() ?? [:] { out[key, default: Extra()].mask |= bits }
        return out
    }

    /// Rows of the words of sentences `range` (feature keys numbered in a fresh index, or looked up in `frozen`).
    struct Part {
        var rowOffsets: [Int] = [0]
        var rows: [Int32] = []
        var index = FeatureIndex(expected: 1 << 19)
        var occurrences: [Int32] = []
    }

    static func part(_ interned: Interned, sentences range: Range<Int>, masks: [UInt32]?,
                     frozen: FeatureIndex?, context: Bool) -> Part {
        var out = Part()
        if frozen != nil { out.index = FeatureIndex(expected: 1) }
        let words = interned.sentenceOffsets[range.upperBound] - interned.sentenceOffsets[range.lowerBound]
        out.rowOffsets.reserveCapacity(words + 1)
        out.rows.reserveCapacity(words * 44)
        let keys = UnsafeMutablePointer<UInt64>.allocate(capacity: TaggerFeatures.maxKeys)
        defer { keys.deallocate() }
        var padded: [TaggerWord] = []
        for s in range {
            let lo = interned.sentenceOffsets[s], hi = interned.sentenceOffsets[s + 1]
            padded.removeAll(keepingCapacity: true)
            padded.append(TaggerWord.start)
            padded.append(TaggerWord.start)
            for k in lo..<hi {
                var word = interned.words[Int(interned.ids[k])]
                if let masks { word.tagMask = masks[k] }
                padded.append(word)
            }
            padded.append(TaggerWord.end)
            padded.append(TaggerWord.end)
            padded.withUnsafeBufferPointer { p in
                guard let p = p.baseAddress else { return }
                for i in 0..<(hi - lo) {
                    let n = TaggerFeatures.keys(p, i, into: keys, context: context)
                    for j in 0..<n {
                        if let frozen {
                            let r = frozen.row(keys[j])
                            if r >= 0 { out.rows.append(r) }
                        } else {
                            let (r, isNew) = out.index.insert(keys[j])
                            if isNew { out.occurrences.append(1) } else { out.occurrences[Int(r)] &+= 1 }
                            out.rows.append(r)
                        }
                    }
                    out.rowOffsets.append(out.rows.count)
                }
            }
        }
        return out
    }

    /// Feature rows of every word of `sentences`, built in two halves side by side. Without `frozen`, keys are
    /// numbered (the first half's in its order, then the second half's new ones) into `index`, and `occurrences`
    /// counts them; with it, keys it does not hold are skipped. `masks` overrides the tag sets word by word.
    static func design(_ sentences: [TaggedSentence], _ interned: Interned, tagIndex: [String: Int32],
                       masks: [UInt32]?, frozen: FeatureIndex?, index: inout FeatureIndex,
                       occurrences: inout [Int32], context: Bool) -> TaggerDesign {
        let n = sentences.count
        let halves = n >= 256 ? 2 : 1
        let parts = Slots<Part>(count: halves)
        DispatchQueue.concurrentPerform(iterations: halves) { h in
            parts.set(h, part(interned, sentences: (h * n / halves)..<((h + 1) * n / halves), masks: masks, frozen: frozen,
                                context: context))
        }
        var built = parts.values
        var first = built.removeFirst()
        for other in built {
            var remap: [Int32]? = nil
            if frozen == nil {
                var map = [Int32](repeating: 0, count: other.index.count)
                other.index.forEach { key, row in
                    let (r, isNew) = first.index.insert(key)
                    if isNew { first.occurrences.append(0) }
                    first.occurrences[Int(r)] &+= other.occurrences[Int(row)]
                    map[Int(row)] = r
                }
                remap = map
            }
            let base = first.rows.count
            first.rows.reserveCapacity(base + other.rows.count)
            if let remap { for r in other.rows { first.rows.append(remap[Int(r)]) } } else { first.rows += other.rows }
            first.rowOffsets += other.rowOffsets.dropFirst().map { $0 + base }
        }
        if frozen == nil { index = first.index; occurrences = first.occurrences }
        var gold: [Int32] = []
        gold.reserveCapacity(interned.ids.count)
        for s in sentences { for tag in s.tags { gold.append(tagIndex[tag] ?? -1) } }
        return TaggerDesign(rowOffsets: first.rowOffsets, rows: first.rows, sentenceOffsets: interned.sentenceOffsets,
                            gold: gold)
    }

    /// `design` without the rows of features seen fewer than `minimum` times.
    static func prune(_ design: TaggerDesign, counts: [Int32], minimum: Int) -> TaggerDesign {
        var out = design
        out.rows = []
        out.rowOffsets = [0]
        for w in 0..<design.wordCount {
            for r in design.rowOffsets[w]..<design.rowOffsets[w + 1] where Int(counts[Int(design.rows[r])]) >= minimum {
                out.rows.append(design.rows[r])
            }
            out.rowOffsets.append(out.rows.count)
        }
        return out
    }

    /// Token accuracy of weights on a design (words with a tag the model does not know count as wrong).
    static func accuracy(_ design: TaggerDesign, weights: [Float], transitions: [Float], tags t: Int) -> Double {
        var correct = 0
        var longest = 1
        for s in 0..<design.sentenceCount { longest = max(longest, design.sentenceOffsets[s + 1] - design.sentenceOffsets[s]) }
        let scores = UnsafeMutablePointer<Float>.allocate(capacity: longest * t)
        let delta = UnsafeMutablePointer<Float>.allocate(capacity: longest * t)
        let back = UnsafeMutablePointer<Int32>.allocate(capacity: longest * t)
        let out = UnsafeMutablePointer<Int32>.allocate(capacity: longest)
        defer { scores.deallocate(); delta.deallocate(); back.deallocate(); out.deallocate() }
        weights.withUnsafeBufferPointer { w in
        transitions.withUnsafeBufferPointer { a in
        design.rows.withUnsafeBufferPointer { rows in
                guard let w = w.baseAddress, let a = a.baseAddress, let rows = rows.baseAddress else { return }
                for s in 0..<design.sentenceCount {
                    let lo = design.sentenceOffsets[s], n = design.sentenceOffsets[s + 1] - lo
                    for i in 0..<n {
                        let first = design.rowOffsets[lo + i]
                        TaggerKernels.emissions(w, t: t, rows: rows + first, count: design.rowOffsets[lo + i + 1] - first,
                                                out: scores + i * t)
                    }
                    SequenceDecoder.viterbi(emissions: scores, n: n, tags: t, transitions: a, scratch: delta, back: back,
                                            out: out)
                    for i in 0..<n where out[i] == design.gold[lo + i] { correct += 1 }
                }
        }}}
        return Double(correct) / Double(max(design.wordCount, 1))
    }

    /// The tagger from the chosen weights: rows whose weights are all zero dropped, the rest sorted by key.
    func assemble(tags: [String], index: FeatureIndex, weights: [Float], transitions: [Float],
                  lexicon: TaggerLexicon, training: [TaggedSentence]) throws -> WordTagger {
        let t = tags.count
        var keyed: [(UInt64, Int)] = []
        index.forEach { key, row in
            let r = Int(row)
            if (0..<t).contains(where: { weights[r * t + $0] != 0 }) { keyed.append((key, r)) }
        }
        keyed.sort { $0.0 < $1.0 }
        var w = [Float](repeating: 0, count: keyed.count * t + 8)   // 8 spare values: `TaggerKernels.emissions`
        for (i, (_, r)) in keyed.enumerated() {
            for y in 0..<t { w[i * t + y] = weights[r * t + y] }
        }
        let corpus = TaggedCorpus(source: "", format: .conll, sentences: training)
        let tokenizer = try WordTokenizer(config: WordTokenizer.learn(from: corpus))
        return WordTagger(tags: tags, tokenizer: tokenizer, keys: keyed.map(\.0), weights: w, transitions: transitions,
                          lexicon: lexicon, scheme: EntityMetrics.scheme(of: tags))
    }
}
