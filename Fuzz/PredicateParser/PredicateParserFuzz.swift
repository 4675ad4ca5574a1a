// libFuzzer harness for the activation-predicate parser and evaluator.
//
// Any input must either fail to parse with a PredicateParseError or parse into a predicate
// whose canonical description parses back to an equal predicate; evaluating it against a
// fixed matching dictionary must terminate without trapping.

import ExtensionItems

private let sample: PropertyListValue = [
  "extensionItems": [
    [
      "contentText": "hello",
      "attachments": [
        ["registeredTypeIdentifiers": ["public.jpeg", "public.file-url"]],
        ["registeredTypeIdentifiers": ["public.url"]],
      ],
    ],
    ["attachments": [["registeredTypeIdentifiers": ["com.adobe.pdf"]]]],
  ],
  "count": 3, "ratio": 0.5, "flag": true,
]

public func fuzz(_ bytes: [UInt8]) {
  let text = String(decoding: bytes, as: UTF8.self)
  guard let predicate = try? ActivationPredicate(parsing: text) else { return }
  let printed = predicate.description
  let reparsed: ActivationPredicate
  do {
    reparsed = try ActivationPredicate(parsing: printed)
  } catch {
    fatalError("canonical form does not parse: \(printed): \(error)")
  }
  precondition(reparsed == predicate, "round trip changed the predicate: \(printed)")
  _ = predicate.evaluate(with: sample, variables: ["limit": 10])
}
