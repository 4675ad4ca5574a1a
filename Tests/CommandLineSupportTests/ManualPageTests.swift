import CommandLineSupport
import Foundation
import TestSupport
import Testing

struct ManualPageTests {
  @Test func rendersTheWholePage() {
    let command = CommandDescription(
      name: "repeat", abstract: "Repeat a phrase.",
      discussion: "First paragraph.\n\n.Second, with a \\.",
      version: "1.2",
      arguments: [ArgumentDescription("phrase", abstract: "The phrase to repeat.")],
      options: [
        .option("--count", "-c", value: "count", abstract: "How many times.", default: "2")
      ],
      exitStatuses: [.init(ExitCode(3), "The phrase was empty.")])
    #expect(
      command.manualPage() == #"""
        .TH "REPEAT" "1" "" "NotifyBus 1.2" "NotifyBus Manual"
        .SH NAME
        repeat \- Repeat a phrase
        .SH SYNOPSIS
        .nh
        .ad l
        \fBrepeat\fR [\fB\-\-count\fR \fI<count>\fR] \fI<phrase>\fR
        .ad
        .hy
        .SH DESCRIPTION
        Repeat a phrase.
        .PP
        First paragraph.
        .PP
        \&.Second, with a \e.
        .SH ARGUMENTS
        .TP
        \fI<phrase>\fR
        The phrase to repeat.
        .SH OPTIONS
        .TP
        \fB\-c\fR, \fB\-\-count\fR \fI<count>\fR
        How many times. (default: 2)
        .TP
        \fB\-\-version\fR
        Show the version.
        .TP
        \fB\-h\fR, \fB\-\-help\fR
        Show help information.
        .SH EXIT STATUS
        .TP
        .B 0
        Success, or help or version printed.
        .TP
        .B 1
        A runtime failure, reported on standard error.
        .TP
        .B 3
        The phrase was empty.
        .TP
        .B 64
        Bad usage (EX_USAGE), reported on standard error.

        """#)
  }

  @Test func usesTheGivenSectionAndSource() {
    let page = CommandDescription(name: "notifyd").manualPage(section: 8, source: "NotifyBus")
    #expect(page.hasPrefix(#".TH "NOTIFYD" "8" "" "NotifyBus" "NotifyBus Manual""# + "\n"))
    #expect(!page.contains(".SH ARGUMENTS"))
    #expect(!page.contains(".SH DESCRIPTION"))
  }

  @Test func breaksAMultiLineUsage() {
    let page = CommandDescription(
      name: "notifyutil", usage: "notifyutil [-q] [command ...]\nnotifyutil -h"
    )
    .manualPage()
    #expect(
      page.contains(
        #"\fBnotifyutil\fR [\fB\-q\fR] [command ...]"# + "\n.br\n" + #"\fBnotifyutil\fR \fB\-h\fR"#)
    )
  }

  /// `groff` renders the page without a single warning, and the text reads as the help does.
  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/groff")))
  func rendersWithoutGroffWarnings() throws {
    let directory = TemporaryDirectory("man")
    let page = directory.path("notify-watch.1")
    writeFile(page, Fixtures.watch.manualPage())

    let groff = try Products.runCommand(
      "/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-P", "-cbou", page])
    let (text, warnings) = (groff.output, groff.error)
    #expect(groff.status == 0)
    #expect(warnings == "")
    #expect(text.contains("-c, --count <count>"))
    #expect(text.contains("(values: text, json, verbose; default: text)"))
    #expect(text.contains("The timeout passed before the count was reached."))
  }
}
