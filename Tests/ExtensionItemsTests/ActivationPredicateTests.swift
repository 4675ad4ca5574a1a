import ExtensionItems
import Testing

/// A matching dictionary with one item per element, each holding attachments whose
/// registered types are given.
private func matching(_ items: [[[String]]]) -> PropertyListValue {
  .dictionary([
    "extensionItems": .array(
      items.map { attachments in
        .dictionary([
          "attachments": .array(
            attachments.map { types in
              .dictionary(["registeredTypeIdentifiers": .array(types.map { .string($0) })])
            })
        ])
      })
  ])
}

/// Apple's documented example (1): exactly one item, every attachment a PDF.
private let onlyPDFs = """
  SUBQUERY (
    extensionItems,
    $extensionItem,
    SUBQUERY (
      $extensionItem.attachments,
      $attachment,
      ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "com.adobe.pdf"
    ).@count == $extensionItem.attachments.@count
  ).@count == 1
  """

/// Apple's documented example (2): each attachment conforms to one of two custom types.
private let customActions = """
  SUBQUERY (
    extensionItems,
    $extensionItem,
    SUBQUERY (
      $extensionItem.attachments,
      $attachment,
      ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "org.appextension.action-one" ||
      ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "org.appextension.action-two"
    ).@count == $extensionItem.attachments.@count
  ).@count == 1
  """

/// Tumblr's OR across types: up to 10 images, or text.
private let tumblr = """
  SUBQUERY(extensionItems, $extensionItem, SUBQUERY($extensionItem.attachments, $attachment,
  ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image").@count <= 10
  AND SUBQUERY($extensionItem.attachments, $attachment,
  ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.image").@count >= 1
  ).@count >= 1 OR SUBQUERY(extensionItems, $extensionItem,
  SUBQUERY($extensionItem.attachments, $attachment,
  ANY $attachment.registeredTypeIdentifiers UTI-CONFORMS-TO "public.text").@count >= 1
  ).@count >= 1
  """

struct ActivationPredicateTests {
  @Test func applesPDFExample() throws {
    let predicate = try ActivationPredicate(parsing: onlyPDFs)
    #expect(predicate.evaluate(with: matching([[["com.adobe.pdf", "public.file-url"]]])))
    #expect(predicate.evaluate(with: matching([[["com.adobe.pdf"], ["com.adobe.pdf"]]])))
    #expect(!predicate.evaluate(with: matching([[["com.adobe.pdf"], ["public.jpeg"]]])))
    #expect(!predicate.evaluate(with: matching([[["com.adobe.pdf"]], [["com.adobe.pdf"]]])))
    #expect(!predicate.evaluate(with: matching([])))
    #expect(
      predicate.evaluate(with: matching([[]])),
      "an item without attachments has all (none) of its attachments as PDFs")
  }

  @Test func applesCustomTypeExample() throws {
    let predicate = try ActivationPredicate(parsing: customActions)
    #expect(predicate.evaluate(with: matching([[["org.appextension.action-one"]]])))
    #expect(
      predicate.evaluate(
        with: matching([[["org.appextension.action-two"], ["org.appextension.action-one"]]])))
    #expect(!predicate.evaluate(with: matching([[["org.appextension.action-three"]]])))
    let registry = UniformTypeRegistry.system.declaring(exported: [
      UniformTypeDeclaration(
        identifier: "org.appextension.action-one.detail",
        conformsTo: ["org.appextension.action-one"])
    ])
    let detail = matching([[["org.appextension.action-one.detail"]]])
    #expect(predicate.evaluate(with: detail, registry: registry))
    #expect(!predicate.evaluate(with: detail))
  }

  @Test func tumblrImagesOrText() throws {
    let predicate = try ActivationPredicate(parsing: tumblr)
    #expect(predicate.evaluate(with: matching([[["public.jpeg"], ["public.png"]]])))
    #expect(predicate.evaluate(with: matching([[["public.plain-text"]]])))
    #expect(!predicate.evaluate(with: matching([[["public.url"]]])))
    let elevenImages = Array(repeating: ["public.jpeg"], count: 11)
    #expect(!predicate.evaluate(with: matching([elevenImages])))
  }

  @Test func hidingYourOwnExtension() throws {
    let predicate = try ActivationPredicate(
      parsing: """
        SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a,
          ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "public.url").@count >= 1).@count >= 1
        AND NOT (ANY extensionItems.attachments.registeredTypeIdentifiers
          UTI-EQUALS "com.example.private")
        """)
    #expect(predicate.evaluate(with: matching([[["public.url"]]])))
    #expect(!predicate.evaluate(with: matching([[["public.url", "COM.EXAMPLE.PRIVATE"]]])))
  }

  @Test func operatorsAndLiterals() throws {
    let object: PropertyListValue = [
      "name": "Résumé", "count": 3, "ratio": 0.5, "flag": true, "tags": ["a", "b"],
      "nested": ["inner": ["x": 7]],
    ]
    let truths = [
      "TRUEPREDICATE", "truepredicate", "NOT FALSEPREDICATE", "!(count == 4)",
      "count == 3", "count = 3.0", "count != 4", "count <> 4", "count < 4", "count <= 3",
      "count =< 3", "count > 2", "count >= 3", "count => 3", "ratio == 0.5", "flag == YES",
      "flag == true", "missing == nil", "missing == NULL", "count BETWEEN {1, 3}",
      "'a' IN tags", "\"b\" in tags", "tags CONTAINS 'a'", "'sum' IN name",
      "name BEGINSWITH 'Ré'", "name ENDSWITH[c] 'MÉ'", "name ==[cd] 'resume'",
      "ANY tags == 'b'", "SOME tags == 'b'", "ALL tags IN {'a', 'b'}", "NONE tags == 'c'",
      "tags.@count == 2", "nested.inner.x == 7", "SELF.count == 3", "#count == 3",
      "count == 3 AND flag == YES || FALSEPREDICATE", "count == -3 OR count == 3",
      "$limit > count", "count == 3 && (ratio < 1 and flag != NO)", "ratio == 5e-1",
      "name == 'R\\u00e9sum\\u00e9'",
    ]
    for text in truths {
      let predicate = try ActivationPredicate(parsing: text)
      #expect(predicate.evaluate(with: object, variables: ["limit": 10]), "\(text)")
    }
    let falsehoods = [
      "FALSEPREDICATE", "count == 'three'", "name == 'resume'", "count BETWEEN {4, 9}",
      "ALL tags == 'a'", "ANY missing == 1", "$unbound > 0", "count < 'z'",
      "'public.jpeg' UTI-CONFORMS-TO 'public.text'", "NOT TRUEPREDICATE",
    ]
    for text in falsehoods {
      let predicate = try ActivationPredicate(parsing: text)
      #expect(!predicate.evaluate(with: object), "\(text)")
    }
    let uti = try ActivationPredicate(parsing: "'public.jpeg' uti-conforms-to 'public.image'")
    #expect(uti.evaluate(with: [:]))
  }

  @Test(arguments: [onlyPDFs, customActions, tumblr])
  func descriptionParsesBackToTheSamePredicate(_ text: String) throws {
    let predicate = try ActivationPredicate(parsing: text)
    #expect(try ActivationPredicate(parsing: predicate.description) == predicate)
  }

  @Test func descriptionIsCanonical() throws {
    let predicate = try ActivationPredicate(
      parsing: "not (a == 1 or b != 'x\"y') and any #in.@count >=[c] -2.5")
    #expect(
      predicate.description
        == "NOT (a == 1 OR b != \"x\\\"y\") AND ANY #in.@count >=[c] -2.5")
    let nested = try ActivationPredicate(parsing: "(a == 1 AND b == 2) OR (c == 3 OR d == 4)")
    #expect(nested.description == "a == 1 AND b == 2 OR (c == 3 OR d == 4)")
    #expect(try ActivationPredicate(parsing: predicate.description) == predicate)
  }

  @Test(arguments: [
    ("ANY x UTI-CONFORMS-TO", 21, PredicateParseError.Code.unexpectedEnd, "an expression"),
    ("a == \"b", 5, .unterminatedString, "a closing \""),
    ("SUBQUERY(x, y, TRUEPREDICATE)", 12, .unexpectedToken, "a $variable"),
    ("a == 1 b == 2", 7, .unexpectedToken, "AND, OR"),
    ("(a == 1", 7, .unexpectedEnd, "\")\""),
    ("a 1", 2, .unexpectedToken, "a comparison operator"),
    ("a == 'x\\q'", 7, .invalidEscape, "an escape"),
    ("a == 1 ^ 2", 7, .invalidCharacter, "a token"),
    ("a BETWEEN 3", 10, .unexpectedToken, "BETWEEN followed by"),
    ("a == 1e999", 5, .invalidNumber, "a number"),
    ("a ==[x] 1", 5, .unexpectedToken, "comparison options"),
    ("a.", 2, .unexpectedEnd, "a key or @count"),
    ("$ == 1", 1, .unexpectedToken, "a variable name"),
    ("", 0, .unexpectedEnd, "an expression"),
  ])
  func parseErrorsGivePositionAndExpectation(
    _ text: String, _ offset: Int, _ code: PredicateParseError.Code, _ expected: String
  ) {
    do {
      let predicate = try ActivationPredicate(parsing: text)
      Issue.record("\(text) parsed as \(predicate)")
    } catch {
      #expect(error.code == code, "\(text): \(error)")
      #expect(error.offset == offset, "\(text): \(error)")
      #expect(error.expected.hasPrefix(expected), "\(text): \(error)")
      #expect(error.description.contains("at offset \(offset)"))
    }
  }

  /// The token a parse error points at is quoted whole, and bounded.
  @Test func parseErrorsQuoteTheWholeToken() throws {
    func error(_ text: String) -> PredicateParseError? {
      do {
        _ = try ActivationPredicate(parsing: text)
        return nil
      } catch {
        return error
      }
    }
    let typo = try #require(error("ANY x UTI-CONFORMS-T0 \"public.image\""))
    #expect(typo.offset == 6)
    #expect(typo.found == "\"UTI-CONFORMS-T0\"")
    #expect(typo.description.contains("at offset 6, found \"UTI-CONFORMS-T0\""))
    let quoted = try #require(error("a == 'x' 'a long string, with commas'"))
    #expect(quoted.found == "\"'a long string, with commas'\"")
    let long = String(repeating: "é", count: 50)
    let bounded = try #require(error("a \(long) == 1"))
    #expect(bounded.offset == 2)
    #expect(bounded.found == "\"\(String(repeating: "é", count: 32))...\" (a token of 100 bytes)")
    #expect(try #require(error("$ == 1")).found == "white space")
  }

  /// Every key-path operator the parser accepts is one the evaluator implements; any other is
  /// a parse error naming it.
  @Test func unimplementedKeyPathOperatorsAreParseErrors() throws {
    for name in [
      "@distinctUnionOfArrays", "@distinctUnionOfObjects", "@unionOfArrays", "@unionOfObjects",
      "@distinctUnionOfSets", "@unionOfSets", "@first", "@COUNT",
    ] {
      do {
        let predicate = try ActivationPredicate(parsing: "extensionItems.\(name).x == 1")
        Issue.record("\(name) parsed as \(predicate)")
      } catch {
        #expect(error.code == .unsupportedOperator, "\(error)")
        #expect(error.offset == 15, "\(error)")
        #expect(error.found.contains(name), "\(error)")
      }
    }
    let items: PropertyListValue = [
      "items": [["size": 2, "tags": ["a", "b"]], ["size": 5, "tags": ["c"]]]
    ]
    let expectations: [(String, Bool)] = [
      ("items.@count == 2", true), ("items.@sum.size == 7", true), ("items.@avg.size == 3.5", true),
      ("items.@min.size == 2", true), ("items.@max.size == 5", true),
      ("items.@sum.tags.@count == 3", true), ("items.size.@sum == 7", true),
      ("items.@count.size == 2", true), ("items.@max.missing == NULL", true),
    ]
    for (text, expected) in expectations {
      #expect(try ActivationPredicate(parsing: text).evaluate(with: items) == expected, "\(text)")
    }
  }

  @Test func nestingIsBounded() {
    let deep = String(repeating: "(", count: 200) + "a == 1" + String(repeating: ")", count: 200)
    #expect(throws: PredicateParseError.self) { try ActivationPredicate(parsing: deep) }
    let negations = String(repeating: "NOT ", count: 500) + "TRUEPREDICATE"
    do {
      _ = try ActivationPredicate(parsing: negations)
      Issue.record("500 nested NOTs parsed")
    } catch {
      #expect(error.code == .nestingTooDeep)
    }
    let ok = String(repeating: "(", count: 30) + "a == 1" + String(repeating: ")", count: 30)
    #expect((try? ActivationPredicate(parsing: ok)) != nil)
  }
}
