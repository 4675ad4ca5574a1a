import AppGroups
import Testing

struct GroupIdentifierTests {
  @Test(arguments: [
    "group.com.example.app", "group.org.example_1.share-target", "group.a.b",
    "group.com.Example.APP",
  ])
  func acceptsValidIdentifiers(_ identifier: String) throws {
    #expect(try GroupIdentifier(validating: identifier).rawValue == identifier)
    #expect(GroupIdentifier(rawValue: identifier) != nil)
  }

  @Test(
    arguments: [
      ("com.example.app", "does not start with 'group.'"),
      ("group.example", "at least two"),
      ("group.com..example", "is empty"),
      ("group.com.example.", "is empty"),
      ("group.com.1example", "starts with a digit"),
      ("group.com/example.x", "'/'"),
      ("group.com.example/../..", "'/'"),
      ("group...", "is empty"),
      ("group.com.exa mple", "' '"),
      ("group.com.exämple", "non-ASCII"),
      ("group." + String(repeating: "a.", count: 130) + "b", "longer than 255"),
    ] as [(String, String)])
  func rejectsInvalidIdentifiersAndSaysWhy(_ identifier: String, _ reason: String) {
    #expect(GroupIdentifier(rawValue: identifier) == nil)
    let error = #expect(throws: ContainerError.self) {
      try GroupIdentifier(validating: identifier)
    }
    #expect(error?.code == .invalidIdentifier)
    #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
  }
}
