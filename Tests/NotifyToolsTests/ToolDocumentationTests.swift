import CommandLineSupport
import Glibc
import SystemSupport
import TestSupport
import Testing

/// The tools' manual pages, completion scripts and help texts in the documents are what the
/// tools themselves generate and print.
struct ToolDocumentationTests {
  static let root = String(#filePath.split(separator: "/").dropLast(3).map { "/" + $0 }.joined())

  /// Every installed tool and its manual page.
  static let pages = [
    ("notify-post", "notify-post.1"), ("notify-watch", "notify-watch.1"),
    ("notifyutil", "notifyutil.1"), ("notifyd", "notifyd.8"),
    ("share-extension", "share-extension.1"), ("readlater", "readlater.1"),
    ("notifybus", "notifybus.1"),
  ]

  static func read(_ path: String) throws -> String {
    try Products.runCommand("cat", [path]).output
  }

  /// `man/` holds exactly what each tool prints with `--generate-manual-page`; set
  /// `NOTIFYBUS_UPDATE_MAN=1` to rewrite it.
  @Test(arguments: pages)
  func manualPageIsGeneratedByTheTool(_ tool: String, _ page: String) throws {
    let generated = try Products.run(tool, ["--generate-manual-page"])
    #expect(generated.status == 0, "\(generated)")
    let path = "\(Self.root)/man/\(page)"
    if Environment.value("NOTIFYBUS_UPDATE_MAN") != nil {
      let file = fopen(path, "w")
      fputs(generated.output, file)
      fclose(file)
    }
    #expect(
      try Self.read(path) == generated.output,
      "man/\(page) is stale: run the tests with NOTIFYBUS_UPDATE_MAN=1")
  }

  /// Each page has every section once, and lists every exit status once.
  @Test(arguments: pages)
  func manualPageHasEachSectionOnce(_ tool: String, _ page: String) throws {
    let lines = try Products.run(tool, ["--generate-manual-page"]).output
      .split(separator: "\n").map(String.init)
    for section in [
      "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "FILES", "EXIT STATUS",
      "EXAMPLES", "SEE ALSO",
    ] {
      let count = lines.filter { $0 == ".SH \(section)" }.count
      #expect(count == 1, "\(page): \(section)")
    }
    let statusStart = try #require(lines.firstIndex(of: ".SH EXIT STATUS"))
    let statusEnd =
      lines[(statusStart + 1)...].firstIndex { $0.hasPrefix(".SH ") } ?? lines.endIndex
    let codes = lines[statusStart..<statusEnd].filter { $0.hasPrefix(".B ") }
    #expect(Set(codes).count == codes.count, "\(page) lists a status twice: \(codes)")
    #expect(codes.starts(with: [".B 0", ".B 1"]) && codes.contains(".B 64"), "\(page): \(codes)")
  }

  /// groff formats each page without a warning, as lintian checks it.
  @Test(.enabled(if: has("man") && has("groff")), arguments: pages)
  func manualPageFormatsWithoutWarnings(_ tool: String, _ page: String) throws {
    let result = try Products.runCommand(
      "man", ["--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", "\(Self.root)/man/\(page)"],
      environment: ["LC_ALL": "C.UTF-8", "MANROFFSEQ": "", "MANWIDTH": "80"])
    #expect(result.status == 0 && result.error.isEmpty, "\(page): \(result.error)")
  }

  /// Every fenced block in `Protocol/cli-conventions.md` that starts with `$ <tool> ...` shows
  /// that command's real standard output.
  @Test func conventionsDocumentShowsTheToolsRealHelp() throws {
    let text = try Self.read("\(Self.root)/Protocol/cli-conventions.md")
    var checked: [String] = []
    for block in text.split(separator: "```\n", omittingEmptySubsequences: false).dropFirst()
      .enumerated().filter({ $0.offset % 2 == 0 }).map(\.element)
    where block.hasPrefix("$ ") {
      let command = block.prefix { $0 != "\n" }.dropFirst(2).split(separator: " ").map(String.init)
      let documented = String(block.drop { $0 != "\n" }.dropFirst())
      let result = try Products.run(command[0], Array(command.dropFirst()))
      #expect(result.status == 0, "\(command)")
      #expect(documented == result.output, "the document's '\(command.joined(separator: " "))'")
      checked.append(command[0])
    }
    #expect(Set(checked).isSuperset(of: Self.pages.map(\.0)), "\(checked)")
  }

  // MARK: - Completion scripts

  static func has(_ shell: String) -> Bool {
    ["/usr/bin/", "/bin/"].contains { access($0 + shell, X_OK) == 0 }
  }

  static let tools = pages.map(\.0) + ["notifybus-demo"]

  /// Each tool's script for each shell parses.
  @Test(arguments: tools)
  func completionScriptsParse(_ tool: String) throws {
    for (shell, check) in [("bash", ["-n"]), ("zsh", ["-n"]), ("fish", ["--no-execute"])]
    where Self.has(shell) {
      let script = try Products.run(tool, ["--generate-completion-script", shell])
      #expect(script.status == 0 && !script.output.isEmpty, "\(tool) \(shell)")
      let file = "/tmp/notifybus-completion-\(getpid())-\(tool).\(shell)"
      let handle = fopen(file, "w")
      fputs(script.output, handle)
      fclose(handle)
      defer { unlink(file) }
      let result = try Products.runCommand(shell, check + [file])
      #expect(result.status == 0, "\(tool) \(shell): \(result)")
    }
  }

  /// Runs bash's completion for `words` (the last one being completed) and returns the
  /// candidates.
  func bashCompletions(_ words: [String]) throws -> [String] {
    let script = try Products.run(words[0], ["--generate-completion-script", "bash"]).output
    let quoted = words.map { "'\($0)'" }.joined(separator: " ")
    let program = """
      \(script)
      COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
      _\(String(words[0].map { $0.isLetter || $0.isNumber ? $0 : "_" }))
      printf '%s\\n' "${COMPREPLY[@]}"
      """
    return try Products.runCommand("bash", ["-c", program]).output.split(separator: "\n")
      .map(String.init)
  }

  @Test func bashCompletesOptionsValuesAndSubcommands() throws {
    #expect(try bashCompletions(["notify-watch", "--co"]) == ["--count"])
    #expect(
      try bashCompletions(["notify-watch", "--bus", ""]) == [
        "session", "system", "embedded", "auto",
      ])
    #expect(try bashCompletions(["notify-watch", "--count", ""]) == [])
    #expect(try bashCompletions(["readlater", "w"]) == ["watch"])
    #expect(try bashCompletions(["readlater", "watch", "--ti"]) == ["--timeout"])
    #expect(
      try bashCompletions(["readlater", "list", "--"]) == [
        "--group", "--json", "--version", "--help",
      ])
    #expect(try bashCompletions(["notifyutil", "-dis"]) == ["-dispatch"])
    // -signal's value is optional: what follows may be the next command.
    #expect(try bashCompletions(["notifyutil", "-signal", "-dis"]) == ["-dispatch"])
    #expect(try bashCompletions(["share-extension", "--rule", "i"]) == ["images"])
  }

  @Test(.enabled(if: has("fish"))) func fishCompletesOptionsAndSubcommands() throws {
    func complete(_ line: String) throws -> [String] {
      let tool = String(line.prefix { $0 != " " })
      let script = try Products.run(tool, ["--generate-completion-script", "fish"]).output
      let program = script + "\ncomplete -C '\(line)'\n"
      return try Products.runCommand("fish", ["--no-config", "-c", program]).output
        .split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
    }
    #expect(try complete("notify-watch --co") == ["--count"])
    #expect(try complete("notify-watch --bus s").sorted() == ["session", "system"])
    #expect(try complete("readlater ").sorted() == ["list", "open", "watch"])
    #expect(try complete("readlater watch --ti") == ["--timeout"])
  }

  /// A zsh script that completes a line in an interactive zsh on a pseudo-terminal.
  ///
  /// The tool's script is installed as `_<tool>` on `fpath`, as a package installs it, and
  /// the matches offered are recorded from each `compadd` call. Each step waits for a marker
  /// the shell prints after it, and the completion step for its matches to be recorded.
  static let zshDriver = #"""
    zmodload zsh/zpty
    hits=$1 dir=$2 line=$3
    integer n=0
    step() {
      zpty -w z "$1"
      (( n += 1 ))
      zpty -w z "print -r -- DONE\$(( $n * 1000 + 7 ))"
      zpty -r z out "*DONE$(( n * 1000 + 7 ))*"
    }
    zpty z zsh -f -i
    step "PROMPT= ; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
    step "compadd () { builtin compadd -O __hits \"\$@\"; (( \$#__hits )) && print -rl -- \$__hits >> ${(q)hits}; builtin compadd \"\$@\" }"
    zpty -w z "$line"$'\t'
    # The completion records its matches; wait for them (bounded) before clearing the line.
    for i in {1..300}; do [[ -s $hits ]] && break; sleep 0.1; done
    step $'\x15'
    zpty -d z
    """#

  @Test(.enabled(if: has("zsh")), .timeLimit(.minutes(3)))
  func zshCompletesOptionsValuesAndSubcommands() throws {
    let directory = "/tmp/notifybus-zsh-\(getpid())"
    mkdir(directory, 0o700)
    defer { _ = try? Products.runCommand("rm", ["-rf", directory]) }
    func write(_ text: String, to path: String) {
      let file = fopen(path, "w")
      fputs(text, file)
      fclose(file)
    }
    write(Self.zshDriver, to: directory + "/driver.zsh")
    func complete(_ line: String) throws -> [String] {
      let tool = String(line.prefix { $0 != " " })
      write(
        try Products.run(tool, ["--generate-completion-script", "zsh"]).output,
        to: "\(directory)/_\(tool)")
      let hits = directory + "/hits"
      write("", to: hits)
      let result = try Products.runCommand(
        "zsh", ["-f", directory + "/driver.zsh", hits, directory, line])
      #expect(result.status == 0, "\(result)")
      return Array(Set(try Self.read(hits).split(separator: "\n").map(String.init))).sorted()
    }
    #expect(try complete("notify-watch --co") == ["--count"])
    #expect(try complete("notify-watch --bus s") == ["session", "system"])
    #expect(try complete("readlater ") == ["list", "open", "watch"])
    #expect(try complete("readlater watch --ti") == ["--timeout"])
    #expect(try complete("notifyutil -dis") == ["-dispatch"])
  }
}
