// MLToolEngine: graph executor and CPU kernels (scalar reference + fast path).
