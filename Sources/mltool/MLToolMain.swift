import MLToolCLI

@main
struct MLToolMain {
    static func main() {
        CLI.main(arguments: Array(CommandLine.arguments.dropFirst()))
    }
}
