// libFuzzer harness for Info.plist manifest reading.
//
// Built by `Fuzz/run ExtensionManifest` together with the ExtensionItems sources as one
// module. Any input must either be rejected with an ExtensionManifestError or give a
// manifest whose activation rule can be evaluated and whose type declarations build a
// registry. The seed corpus holds the share-extension snippet of seeds/001 as an XML and a
// binary property list, and a manifest with a predicate rule and custom types.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Data(bytes: data, count: size)
  guard let manifest = try? ExtensionManifest(propertyList: bytes) else { return 0 }
  let registry = manifest.typeRegistry
  let item = ExtensionItem(
    attributedContentText: "text",
    attachments: [
      ItemProvider(url: URL(string: "https://example.com")!),
      ItemProvider(data: Data([1]), type: .jpeg),
    ])
  _ = manifest.activationRule?.evaluate([item], registry: registry)
  return 0
}
