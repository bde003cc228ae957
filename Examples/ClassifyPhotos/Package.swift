// swift-tools-version:6.0
// A program that uses mltool as a library: one dependency, one product, `import MLTool`.
//   ClassifyPhotos  classifies photos with an ImageNet model, then trains a classifier of its own and uses it
//   APIDocs         every swift example of docs/API.md, generated from the page (`make api-docs`); `make test`
//                   regenerates it, builds it and runs it (Examples/examples.py)
import PackageDescription

let package = Package(
    name: "ClassifyPhotos",
    // A path dependency is known by its folder's name unless it is given one: `name:` keeps the product reference
    // below valid wherever mltool is checked out. Point `path` at your copy of mltool.
    dependencies: [.package(name: "mltool", path: "../..")],
    targets: [
        .executableTarget(name: "ClassifyPhotos", dependencies: [.product(name: "MLTool", package: "mltool")]),
        .executableTarget(name: "APIDocs", dependencies: [.product(name: "MLTool", package: "mltool")]),
    ]
)
