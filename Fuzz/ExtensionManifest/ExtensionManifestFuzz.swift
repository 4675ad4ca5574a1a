// libFuzzer harness for Info.plist manifest reading.
//
// Any input must either be rejected with an ExtensionManifestError or give a manifest whose
// activation rule can be evaluated and whose type declarations build a registry. The seed
// corpus holds the share-extension part of the example's Info.plist as an XML and a binary
// property list, and a manifest with a predicate rule and custom types.

import ExtensionItems
import Foundation

public func fuzz(_ bytes: [UInt8]) {
  guard let manifest = try? ExtensionManifest(propertyList: Data(bytes)) else { return }
  let registry = manifest.typeRegistry
  let item = ExtensionItem(
    attributedContentText: "text",
    attachments: [
      ItemProvider(url: URL(string: "https://example.com")!),
      ItemProvider(data: Data([1]), type: .jpeg),
    ])
  _ = manifest.activationRule?.evaluate([item], registry: registry)
}
