import MLToolCore

extension TreeEnsemble {
    /// Appends a grown tree: its nodes in order, children numbered from the tree's first node.
    mutating func append(_ grown: [TreeGrower.Node], features: [TabularConfig.Feature]) {
        for node in grown {
            var flags: Int32 = node.missingLeft ? 1 : 0, offset: Int32 = 0
            if node.feature >= 0, node.categorical {
                flags |= 2
                offset = Int32(categoryWords.count)
                var words = [UInt32](repeating: 0, count: ((features[node.feature].categories?.count ?? 0) + 31) / 32)
                for c in node.categories { words[c >> 5] |= 1 << UInt32(c & 31) }
                categoryWords += words
            }
            nodes += [Int32(node.feature), Int32(node.left), Int32(node.right), node.feature >= 0 ? flags : 0,
                      node.feature >= 0 ? offset : 0]
            values.append(node.feature >= 0 ? (node.categorical ? 0 : node.threshold) : node.value)
        }
        treeStarts.append(Int32(values.count))
    }

    /// Keeps the first `trees` trees (and the category words their splits use).
    mutating func truncate(trees: Int) {
        guard trees < treeCount else { return }
        let end = Int(treeStarts[trees])
        // Words are appended in node order: the kept ones end with the last kept categorical split's span.
        var words = 0
        if let last = (0..<end).last(where: { nodes[$0 * 5] >= 0 && nodes[$0 * 5 + 3] & 2 != 0 }) {
            let f = Int(nodes[last * 5])
            words = Int(nodes[last * 5 + 4]) + ((features[f].categories?.count ?? 0) + 31) / 32
        }
        treeStarts.removeLast(treeCount - trees)
        nodes.removeLast(nodes.count - end * 5)
        values.removeLast(values.count - end)
        categoryWords.removeLast(categoryWords.count - words)
    }
}
