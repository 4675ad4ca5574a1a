import ExtensionItems
import Foundation
import HandoffExamples
import Testing

/// The share extension's refusal messages name the part of the rule that failed.
struct ActivationCheckTests {
  static let url = ItemProvider(url: URL(string: "https://example.com")!)
  static let text = ItemProvider(text: "hello")
  static let image = ItemProvider(data: Data([1, 2, 3]), type: .png)

  static func rule(_ choice: ShareManifests.Choice) throws -> ActivationRule {
    try #require(ShareManifests.manifest(choice).activationRule)
  }

  @Test func acceptedItemsHaveNoRefusal() throws {
    let items = [ExtensionItem(attachments: [Self.url, Self.text])]
    #expect(ActivationCheck.refusal(for: items, rule: try Self.rule(.seed)) == nil)
    let images = [ExtensionItem(attachments: Array(repeating: Self.image, count: 5))]
    #expect(ActivationCheck.refusal(for: images, rule: try Self.rule(.images)) == nil)
  }

  @Test func aMaximumCountNamesItsKey() throws {
    let items = [ExtensionItem(attachments: [Self.url, Self.url])]
    #expect(
      ActivationCheck.refusal(for: items, rule: try Self.rule(.seed))
        == "NSExtensionActivationSupportsWebURLWithMaxCount is 1, but 2 web URLs were shared.")
  }

  @Test func anUnacceptedTypeNamesTheKeyItNeeds() throws {
    let items = [ExtensionItem(attachments: [Self.url, Self.image])]
    let refusal = ActivationCheck.refusal(for: items, rule: try Self.rule(.seed)) ?? ""
    #expect(refusal.contains("Attachment 2 (public.png) is not accepted"))
    #expect(refusal.contains("NSExtensionActivationSupportsImageWithMaxCount"))
  }

  @Test func anExplicitZeroInAFuzzyRuleIsNamed() throws {
    let rule = ActivationRule.dictionary(
      ActivationDictionary([
        "NSExtensionActivationDictionaryVersion": .integer(2),
        "NSExtensionActivationSupportsImageWithMaxCount": .integer(0),
        "NSExtensionActivationSupportsText": .bool(true),
      ]))
    let items = [ExtensionItem(attachments: [Self.text, Self.image])]
    #expect(
      ActivationCheck.refusal(for: items, rule: rule)
        == "Attachment 2 (public.png) is not accepted: "
        + "NSExtensionActivationSupportsImageWithMaxCount is 0.")
  }

  @Test func aPredicateRuleRefusesAsAWhole() throws {
    let rule = ActivationRule.predicate(try ActivationPredicate(parsing: "FALSEPREDICATE"))
    let refusal = ActivationCheck.refusal(for: [ExtensionItem(attachments: [Self.url])], rule: rule)
    #expect(refusal?.hasPrefix("The activation predicate") == true)
  }

  @Test func nothingToShareIsSaidSo() throws {
    let refusal = ActivationCheck.refusal(
      for: [ExtensionItem(attributedTitle: "only a title")], rule: try Self.rule(.seed))
    #expect(refusal?.hasPrefix("Nothing to share") == true)
  }
}
