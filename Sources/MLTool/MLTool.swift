// mltool as a Swift library: `import MLTool` gives a program what the `mltool` command does, one call per flow.
//
//   let model = try Model(contentsOf: url)                          load and inspect any model file
//   let classifier = try ImageClassifier(model: model)              classify images (files, bytes, pixels, batches)
//   let text = try TextClassifier(model: model)                     predict labels for strings
//   let sound = try SoundClassifier(model: model)                   labels per time range of a recording
//   let result = try ImageClassifierTrainer(data: ..., parameters: .init()).train()   train from folders or tables
//   let outcome = try Evaluator(...).evaluate()                     metrics, confusion, comparison, HTML report
//   let q = try QuantizationPipeline(...).run()                     compress weights, with the accuracy gate
//   ModelImport / ModelExport                                       ONNX, Keras HDF5, Core ML in and out
//
// The pipelines live here (one home each, their defaults in one parameters struct); the algorithms they call live
// in the targets below (docs/ARCHITECTURE.md). Library code never prints: progress comes back as events, results
// as values, failures as typed errors.
@_exported import MLToolAudio
@_exported import MLToolCore
@_exported import MLToolData
@_exported import MLToolDetect
@_exported import MLToolEngine
@_exported import MLToolEval
@_exported import MLToolExport
@_exported import MLToolFormat
@_exported import MLToolImport
@_exported import MLToolNL
@_exported import MLToolQuant
@_exported import MLToolTabular
@_exported import MLToolTrain
