import ExtensionItems
import Foundation
import Testing

private func share(_ attachments: [[UniformType]], contentText: String? = nil) -> [ExtensionItem] {
  [
    ExtensionItem(
      attributedContentText: contentText.map { AttributedText($0) },
      attachments: attachments.map { types in
        ItemProvider(
          representations: types.map { ItemRepresentation(type: $0, content: .data(Data())) })
      })
  ]
}

private func rule(_ entries: [String: PropertyListValue]) -> ActivationRule {
  .dictionary(ActivationDictionary(entries))
}

private let imageKey = ActivationKey.image.name
private let movieKey = ActivationKey.movie.name
private let textKey = ActivationKey.text.name
private let fileKey = ActivationKey.file.name
private let webURLKey = ActivationKey.webURL.name
private let webPageKey = ActivationKey.webPage.name
private let version = ActivationKey.dictionaryVersionName
private let strictKey = ActivationKey.usesStrictMatchingName

struct ActivationDictionaryTests {
  @Test func versionOneNeedsEveryTypeVersionTwoAny() {
    let imageAndText = share([[.jpeg], [.plainText]])
    #expect(!rule([textKey: true]).evaluate(imageAndText), "v1 (absent): strict")
    #expect(!rule([textKey: true, version: 1]).evaluate(imageAndText))
    #expect(rule([textKey: true, version: 2]).evaluate(imageAndText), "v2: fuzzy")
    #expect(!rule([textKey: true, version: 2, strictKey: true]).evaluate(imageAndText))
    #expect(ActivationDictionary([version: 2]).usesStrictMatching == false)
    #expect(ActivationDictionary([:]).usesStrictMatching)
  }

  @Test func fuzzyImagesAndText() {
    let r = rule([imageKey: 10, textKey: true, version: 2])
    #expect(r.evaluate(share([[.jpeg], [.pdf]])), "unknown or other types are ignored")
    #expect(r.evaluate(share([[.plainText], ["com.example.unknown"]])))
    #expect(!r.evaluate(share([[.pdf]])), "at least one attachment must be image or text")
    #expect(!r.evaluate(share(Array(repeating: [UniformType.png], count: 11))), "at most 10")
    #expect(r.evaluate(share(Array(repeating: [UniformType.png], count: 10))))
  }

  @Test func explicitZeroRejectsUnderVersionTwo() {
    let r = rule([fileKey: 0, imageKey: 5, version: 2])
    #expect(r.evaluate(share([[.jpeg], [.png]])))
    #expect(!r.evaluate(share([[.jpeg], [.pdf]])), "a non-image file is rejected")
    #expect(!r.evaluate(share(Array(repeating: [UniformType.jpeg], count: 6))))
    #expect(r.evaluate(share([[.jpeg], [.plainText]])), "text is not a file")
  }

  @Test func versionOneEveryAttachmentMustBeAccepted() {
    let r = rule([fileKey: 0, imageKey: 5, textKey: true])
    #expect(r.evaluate(share([[.jpeg], [.plainText]])))
    #expect(!r.evaluate(share([[.jpeg], [.pdf]])))
    #expect(!r.evaluate(share([[.jpeg], ["com.example.unknown"]])))
    let images = rule([imageKey: 10, movieKey: 1, webURLKey: 1])
    #expect(images.evaluate(share([[.jpeg], [.mpeg4Movie], [.url]])), "Apple's example 3")
    #expect(!images.evaluate(share([[.mpeg4Movie], [.mpeg4Movie]])))
  }

  @Test func fileCoversImagesMoviesAndFileURLs() {
    let r = rule([fileKey: 3])
    #expect(r.evaluate(share([[.jpeg], [.pdf], [.fileURL]])))
    #expect(!r.evaluate(share([[.jpeg], [.pdf], [.fileURL], [.zip]])))
    #expect(!r.evaluate(share([[.url]])), "a web URL is not a file")
    #expect(!r.evaluate(share([[.plainText]])), "text is not a file")
    #expect(ActivationKey.file.counts(.fileURL))
    #expect(!ActivationKey.webURL.counts(.fileURL))
    #expect(ActivationKey.webURL.counts(.url))
  }

  @Test func attachmentCounts() {
    let r = rule([
      ActivationKey.attachments.name: 2, ActivationKey.attachmentsMinimumCountName: 2,
    ])
    #expect(r.evaluate(share([["com.example.anything"], [.jpeg]])))
    #expect(!r.evaluate(share([[.jpeg]])))
    #expect(!r.evaluate(share([[.jpeg], [.jpeg], [.jpeg]])))
  }

  @Test func textOnlyRequestsUseContentText() {
    #expect(rule([textKey: true]).evaluate(share([], contentText: "hello")))
    #expect(!rule([textKey: true]).evaluate(share([])))
    #expect(!rule([imageKey: 1]).evaluate(share([], contentText: "hello")))
  }

  @Test func seedRuleWithSafariURL() throws {
    let seedRule = rule([webURLKey: 1, webPageKey: 1, textKey: true])
    var page = ExtensionItem(attachments: [ItemProvider(url: URL(string: "https://swift.org")!)])
    #expect(seedRule.evaluate([page]))
    page.setUserInfoValue(true, forKey: MatchingDictionary.supportsJavaScriptKey)
    let dictionary = MatchingDictionary.make(for: [page])
    let types = dictionary.dictionaryValue?["extensionItems"]?.arrayValue?.first?
      .dictionaryValue?["attachments"]?.arrayValue?.first?.dictionaryValue?[
        "registeredTypeIdentifiers"]
    #expect(types == ["public.url", "com.apple.active-webpage"])
    #expect(seedRule.evaluate([page]))
    #expect(rule([webPageKey: 1]).evaluate([page]))
    #expect(!rule([webPageKey: 1]).evaluate(share([[.url]])), "not loaded as a web page")
    let twoURLs = share([[.url], [.url]])
    #expect(!seedRule.evaluate(twoURLs))
  }

  @Test func tumblrImageWithLinkIsNotAWebURL() throws {
    var photo = ItemProvider(data: Data([0xFF, 0xD8]), type: .jpeg)
    photo.register(.url(URL(string: "https://example.com/photo")!), as: .url)
    let items = [
      ExtensionItem(attachments: [photo, ItemProvider(text: "caption")])
    ]
    #expect(!rule([webURLKey: 1]).evaluate(items))
    #expect(rule([imageKey: 1, textKey: true]).evaluate(items))
    let unpruned = MatchingDictionary.Options(prunesURLFromMultitypeProviders: false)
    #expect(rule([webURLKey: 1, version: 2]).evaluate(items, options: unpruned))
    #expect(!rule([webURLKey: 1, version: 2]).evaluate(items))
  }

  /// Apple reads counts and versions with `intValue`, so `<string>1</string>` is 1.
  @Test func stringValuesReadAsIntValueReadsThem() throws {
    let oneURL = share([[.url]])
    #expect(rule([webURLKey: "1"]).evaluate(oneURL))
    #expect(!rule([webURLKey: "1"]).evaluate(share([[.url], [.url]])), "at most one")
    #expect(rule([webURLKey: " +2 URLs"]).evaluate(share([[.url], [.url]])))
    #expect(!rule([webURLKey: "many"]).evaluate(oneURL), "not a number: 0")
    #expect(!rule([webURLKey: ""]).evaluate(oneURL))
    #expect(
      rule([imageKey: "10", textKey: "YES", version: "2"]).evaluate(share([[.jpeg], [.pdf]])))
    #expect(!rule([imageKey: "10", textKey: "NO", version: "2"]).evaluate(share([[.plainText]])))
    let dictionary = ActivationDictionary([
      version: "2", webURLKey: "99999999999", fileKey: "-7", imageKey: .date(Date()),
      strictKey: "yes", movieKey: "  3.9",
    ])
    #expect(dictionary.version == 2)
    #expect(dictionary.usesStrictMatching, "\"yes\" is true, as boolValue reads it")
    #expect(dictionary.value(for: .webURL) == Int64(Int32.max), "saturates as intValue does")
    #expect(dictionary.value(for: .file) == -7)
    #expect(dictionary.value(for: .image) == nil, "a date is no number")
    #expect(dictionary.value(for: .movie) == 3)
    #expect(ActivationDictionary([strictKey: "0"]).boolean(strictKey) == false)
    #expect(ActivationDictionary([webURLKey: "-99999999999"]).integer(webURLKey) == -2_147_483_648)
    #expect(
      ActivationCheck.refusal(for: share([[.url], [.url]]), rule: rule([webURLKey: "1"]))
        == "NSExtensionActivationSupportsWebURLWithMaxCount is 1, but 2 web URLs were shared.")
  }

  /// A rule that is neither a dictionary nor a string says what it is.
  @Test func ruleOfTheWrongKindSaysWhatItFound() {
    let cases: [(PropertyListValue, String)] = [
      (3, "an integer"), ([1, 2], "an array"), (true, "a Boolean"), (.data(Data([1])), "data"),
    ]
    for (value, kind) in cases {
      do {
        let parsed = try ActivationRule(propertyListValue: value)
        Issue.record("\(value) read as \(parsed)")
      } catch {
        #expect(error.code == .notARule, "\(error)")
        #expect(error.found.hasPrefix(kind), "\(error)")
        #expect(
          error.description == "expected a dictionary or a predicate string, found \(error.found)")
      }
    }
  }

  @Test func ruleFromManifestValues() throws {
    #expect(try ActivationRule(propertyListValue: "TRUEPREDICATE").isTruePredicate)
    #expect(throws: PredicateParseError.self) { try ActivationRule(propertyListValue: 3) }
    #expect(throws: PredicateParseError.self) { try ActivationRule(propertyListValue: "a ==") }
    let r = try ActivationRule(propertyListValue: [imageKey: 1])
    #expect(r == .dictionary(ActivationDictionary([imageKey: 1])))
  }
}
