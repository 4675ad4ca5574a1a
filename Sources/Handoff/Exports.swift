// The types the handoff's API takes and returns are part of this module's API, so
// `import Handoff` is all an extension or an app writes: the items and providers
// (ExtensionItems, which brings PropertyLists) and Foundation's URL, Data and Date.
@_exported public import ExtensionItems
@_exported public import Foundation
