import ExtensionItems
import Foundation
import Testing

struct ExtensionItemTests {
  @Test func propertiesAreReflectedIntoUserInfo() {
    var item = ExtensionItem(userInfo: ["source": "safari"])
    item.attributedTitle = "Swift on Linux"
    item.attributedContentText = AttributedText(
      "Body", richText: .init(type: .rtf, data: Data("{\\rtf1 Body}".utf8)))
    let info = item.userInfo
    #expect(info["source"] == "safari")
    #expect(info[ExtensionItem.attributedTitleKey] == "Swift on Linux")
    #expect(
      info[ExtensionItem.attributedContentTextKey]
        == [
          "string": "Body", "type": "public.rtf", "data": .data(Data("{\\rtf1 Body}".utf8)),
        ])
    #expect(item.customUserInfo == ["source": "safari"])
  }

  @Test func assigningUserInfoOverridesEarlierProperties() {
    var item = ExtensionItem(attributedTitle: "Old title", attributedContentText: "Old text")
    item.attachments = [ItemProvider(text: "attachment")]
    item.userInfo = ["k": 1]
    #expect(item.attributedTitle == nil)
    #expect(item.attributedContentText == nil)
    #expect(item.attachments.count == 1, "attachments are not part of userInfo")
    item.userInfo = [ExtensionItem.attributedTitleKey: "New", ExtensionItem.attachmentsKey: 3]
    #expect(item.attributedTitle == "New")
    #expect(item.customUserInfo == [:])
  }

  @Test func propertySetAfterUserInfoWins() {
    var item = ExtensionItem()
    item.userInfo = [ExtensionItem.attributedTitleKey: "From userInfo"]
    item.attributedTitle = "From property"
    #expect(item.userInfo[ExtensionItem.attributedTitleKey] == "From property")
  }

  @Test func bareDataIsRTFAndRTFDIsPreferred() {
    var item = ExtensionItem()
    item.userInfo = [
      ExtensionItem.attributedTitleKey: .data(Data("rtf".utf8)),
      ExtensionItem.rtfdAttributedTitleKey: .data(Data("rtfd".utf8)),
      ExtensionItem.attributedContentTextKey: .data(Data("rtf".utf8)),
    ]
    #expect(item.attributedTitle?.richText == .init(type: .rtfd, data: Data("rtfd".utf8)))
    #expect(item.attributedContentText?.richText == .init(type: .rtf, data: Data("rtf".utf8)))
    #expect(item.attributedContentText?.string == "")
  }

  @Test func initializerPropertiesWinOverUserInfo() {
    let item = ExtensionItem(
      attributedTitle: "Explicit",
      userInfo: [ExtensionItem.attributedTitleKey: "From userInfo", "k": "v"])
    #expect(item.attributedTitle == "Explicit")
    #expect(item.customUserInfo == ["k": "v"])
  }

  @Test func matchingDictionaryMirrorsTheHost() {
    let item = ExtensionItem(
      attributedTitle: AttributedText("Title", richText: .init(type: .rtf, data: Data([1]))),
      attributedContentText: "Body",
      attachments: [ItemProvider(text: "t")],
      userInfo: ["com.apple.UIKit.private": 1, "custom": "kept"])
    let dictionary = MatchingDictionary.make(for: [item])
    let expected: PropertyListValue = [
      "extensionItems": [
        [
          "title": "Title", "contentText": "Body", "custom": "kept",
          "attachments": [["registeredTypeIdentifiers": ["public.utf8-plain-text"]]],
        ]
      ]
    ]
    #expect(dictionary == expected)
  }

  @Test func unreadableReservedValuesBecomeNil() {
    var item = ExtensionItem(attributedTitle: "t")
    item.setUserInfoValue(42, forKey: ExtensionItem.attributedTitleKey)
    #expect(item.attributedTitle == nil)
    #expect(item.userInfo.isEmpty)
  }

  @Test func providersKeepRegistrationOrderAndIgnoreDuplicates() {
    var provider = ItemProvider(data: Data([1, 2, 3]), type: .png)
    let addedURL = provider.register(.url(URL(string: "https://example.com/a.png")!), as: .url)
    let addedDuplicate = provider.register(.data(Data()), as: "PUBLIC.PNG")
    #expect(addedURL)
    #expect(!addedDuplicate, "types compare without case")
    #expect(provider.registeredTypes == [.png, .url])
    #expect(provider.hasItemConforming(to: .image))
    #expect(provider.hasItemConforming(to: .data))
    #expect(!provider.hasItemConforming(to: .text))
    #expect(provider.registeredTypes(conformingTo: .data) == [.png, .url])
    #expect(provider.registeredTypes(conformingTo: .image) == [.png])
  }

  @Test func convenienceInitializersPickTheirTypes() {
    #expect(ItemProvider(url: URL(string: "https://swift.org")!).registeredTypes == [.url])
    #expect(ItemProvider(url: URL(fileURLWithPath: "/tmp/x")).registeredTypes == [.fileURL])
    #expect(ItemProvider(text: "hi").registeredTypes == [.utf8PlainText])
    let photo = ItemProvider(fileAtPath: "/photos/IMG_1.JPG")
    #expect(photo.registeredTypes == [.jpeg])
    #expect(photo.suggestedName == "IMG_1.JPG")
    #expect(ItemProvider(fileAtPath: "/x/file.unknownext").registeredTypes == [.data])
    #expect(ItemProvider(fileAtPath: "/x/noextension").registeredTypes == [.data])
  }

  @Test func propertyListValuesConvertFromFoundation() throws {
    let xml = """
      <?xml version="1.0" encoding="UTF-8"?>
      <plist version="1.0"><dict>
      <key>b</key><true/><key>i</key><integer>1</integer><key>r</key><real>1</real>
      <key>d</key><data>AQI=</data><key>a</key><array><string>x</string></array>
      <key>t</key><date>2001-01-01T00:00:10Z</date>
      </dict></plist>
      """
    let object = try PropertyListSerialization.propertyList(from: Data(xml.utf8), format: nil)
    let value = try #require(PropertyListValue(propertyListObject: object))
    #expect(
      value
        == [
          "b": true, "i": 1, "r": 1.0, "d": .data(Data([1, 2])), "a": ["x"],
          "t": .date(Date(timeIntervalSinceReferenceDate: 10)),
        ])
    #expect(value.nestingDepth == 2)
    let back = try PropertyListSerialization.data(
      fromPropertyList: value.propertyListObject, format: .binary, options: 0)
    let reread = try PropertyListSerialization.propertyList(from: back, format: nil)
    #expect(PropertyListValue(propertyListObject: reread) == value)
    #expect(PropertyListValue(propertyListObject: [1: "non-string key"]) == nil)
  }
}
