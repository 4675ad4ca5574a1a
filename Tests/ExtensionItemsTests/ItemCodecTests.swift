import ExtensionItems
import Foundation
import Testing

struct ItemCodecTests {
  @Test func roundTripsEveryField() throws {
    let bytes = try ItemCodec.encode(SampleItems.all)
    #expect(try ItemCodec.decode(bytes) == SampleItems.all)
    #expect(try ItemCodec.decode(Data(bytes)) == SampleItems.all)
    #expect(try ItemCodec.encodeData(SampleItems.all) == Data(bytes))
  }

  @Test func roundTripsEachItemAlone() throws {
    for item in SampleItems.all {
      #expect(try ItemCodec.decode(ItemCodec.encode([item])) == [item])
    }
  }

  /// The worked example of Protocol/item-codec.md: a message with no items.
  @Test func emptyMessageIsByteExact() throws {
    let hex = """
      6c040101 10000000 01000000 8a000000 01016f00 15000000 2f6f7267 2f6e6f74
      69667962 75732f49 74656d73 31000000 02017300 14000000 6f72672e 6e6f7469
      66796275 732e4974 656d7331 00000000 03017300 05000000 4974656d 73000000
      08016700 34756128 61287361 28736179 29296128 73612873 61792929 61286173
      28646429 61287379 75736179 2929617b 73767d29 617b7376 7d000000 00000000
      01000000 00000000 00000000 00000000
      """
    #expect(try ItemCodec.encode([]) == bytes(hex))
  }

  /// One item with a plain title and nothing else, laid out by hand from the D-Bus rules.
  @Test func titleOnlyItemIsByteExact() throws {
    let message = try ItemCodec.encode([ExtensionItem(attributedTitle: "Hi")])
    let body = Array(message[160...])
    let expected = bytes(
      """
      01000000 30000000 10000000 00000000 02000000 48690000 00000000 00000000
      00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
      """)
    #expect(body == expected)
    #expect(message[4..<8] == [0x40, 0, 0, 0], "body length 64")
    #expect(message.count == 224)
  }

  /// Each limit, items that pass it, and the error code; both directions check them.
  static let limitCases: [(ItemCodecLimits, [ExtensionItem], ItemCodecError.Code)] = [
    (
      ItemCodecLimits(maximumItemCount: 2), Array(repeating: ExtensionItem(), count: 3),
      .tooManyItems
    ),
    (
      ItemCodecLimits(maximumAttachmentCount: 9), [SampleItems.tenAttachments],
      .tooManyAttachments
    ),
    (
      ItemCodecLimits(maximumRepresentationsPerAttachment: 1), [SampleItems.photo],
      .tooManyRepresentations
    ),
    (ItemCodecLimits(maximumInlineBytes: 299), [SampleItems.photo], .tooManyInlineBytes),
    (ItemCodecLimits(maximumNestingDepth: 1), [SampleItems.photo], .nestingTooDeep),
    (ItemCodecLimits(maximumStringLength: 10), [SampleItems.webPage], .stringTooLong),
    (ItemCodecLimits(maximumMessageSize: 200), [SampleItems.webPage], .messageTooLarge),
  ]

  @Test func limitsAreEnforcedWhenEncoding() {
    let cases =
      Self.limitCases + [(.default, [ExtensionItem(attributedTitle: "a\u{0}b")], .invalidString)]
    for (limits, items, code) in cases {
      do {
        _ = try ItemCodec.encode(items, limits: limits)
        Issue.record("encoded despite \(code)")
      } catch {
        #expect(error.code == code, "\(error)")
        #expect(!error.message.isEmpty)
      }
    }
    #expect(
      (try? ItemCodec.encode([SampleItems.photo], limits: .init(maximumNestingDepth: 2))) != nil)
  }

  @Test func limitsAreEnforcedWhenDecoding() throws {
    for (limits, items, code) in Self.limitCases {
      let bytes = try ItemCodec.encode(items)
      do {
        _ = try ItemCodec.decode(bytes, limits: limits)
        Issue.record("decoded despite \(code)")
      } catch {
        #expect(error.code == code, "\(error)")
        #expect(error.offset != nil)
      }
    }
  }

  @Test func truncationAtEveryOffsetFails() throws {
    let bytes = try ItemCodec.encode(SampleItems.all)
    for length in 0..<bytes.count {
      do {
        _ = try ItemCodec.decode(Array(bytes[..<length]))
        Issue.record("decoded a message truncated to \(length) bytes")
      } catch {
        #expect(error.code == .truncated || error.code == .malformed, "\(length): \(error)")
      }
    }
  }

  @Test func everySingleByteCorruptionIsHandled() throws {
    let original = try ItemCodec.encode([SampleItems.webPage, SampleItems.photo])
    for index in original.indices {
      for delta: UInt8 in [1, 0x80, 0xFF] {
        var bytes = original
        bytes[index] &+= delta
        if let items = try? ItemCodec.decode(bytes) {
          // A flip inside a payload can still be a valid message; it must then re-encode.
          #expect((try? ItemCodec.encode(items)) != nil)
        }
      }
    }
  }

  @Test func malformedMessagesNameTheProblem() throws {
    let good = try ItemCodec.encode([ExtensionItem(attributedTitle: "Hi")])
    func corrupt(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
      var bytes = good
      change(&bytes)
      return bytes
    }
    let cases: [([UInt8], ItemCodecError.Code, Int?)] = [
      (corrupt { $0[0] = UInt8(ascii: "x") }, .invalidHeader, 0),
      (corrupt { $0[1] = 2 }, .notAnItemMessage, 1),
      (corrupt { $0[3] = 2 }, .invalidHeader, 3),
      (corrupt { $0[8] = 0 }, .invalidHeader, 8),
      (good + [0], .trailingBytes, good.count),
      (corrupt { $0[26] = UInt8(ascii: "X") }, .notAnItemMessage, 20),
      (corrupt { $0[89] = UInt8(ascii: "X") }, .notAnItemMessage, 84),
      (corrupt { $0[110] = UInt8(ascii: "v") }, .notAnItemMessage, 101),
      (corrupt { $0[160] = 2 }, .unsupportedVersion, 160),
      (corrupt { $0[180] = 0xFF }, .invalidString, 180),
      (corrupt { $0[181] = 0 }, .invalidString, 180),
      (corrupt { $0[183] = 1 }, .malformed, 183),
      (corrupt { $0[191] = 1 }, .malformed, 191),
      (corrupt { $0[164] = 0x2f }, .malformed, nil),
      (corrupt { $0[12] = 0x8b }, .malformed, nil),
    ]
    for (bytes, code, offset) in cases {
      do {
        _ = try ItemCodec.decode(bytes)
        Issue.record("decoded a message that should fail with \(code)")
      } catch {
        #expect(error.code == code, "\(error)")
        if let offset { #expect(error.offset == offset, "\(error)") }
      }
    }
  }

  /// A URL payload is an absolute RFC 3986 URL, carried byte for byte: the encoder refuses a
  /// relative one, and the decoder refuses one that is relative or would need
  /// percent-encoding rather than rewriting it.
  @Test func urlsAreAbsoluteAndKeptByteForByte() throws {
    for text in [
      "HTTPS://Example.COM/a/../b?q=%C3%A4#F", "mailto:someone@example.com", "x:",
      "https://example.com/%7e",
    ] {
      let item = ExtensionItem(attachments: [ItemProvider(url: try #require(URL(string: text)))])
      let decoded = try ItemCodec.decode(try ItemCodec.encode([item]))
      #expect(decoded == [item])
      let representation = try #require(decoded.first?.attachments.first?.representations.first)
      guard case .url(let url) = representation.content else {
        Issue.record("\(text) decoded as \(representation.content)")
        continue
      }
      #expect(url.absoluteString == text)
    }
    let relative = ExtensionItem(
      attachments: [ItemProvider(url: try #require(URL(string: "relative/path")))])
    #expect(throws: ItemCodecError.self) { try ItemCodec.encode([relative]) }

    let good = try ItemCodec.encode([
      ExtensionItem(attachments: [ItemProvider(url: try #require(URL(string: "https://a/xy")))])
    ])
    let at = try #require(
      good.indices.first { good[$0...].starts(with: Array("https://a/xy".utf8)) })
    // Each replacement has the 12 bytes of the original, so only the string changes.
    for replacement in ["relative/pat", "https://a/ü", "https://a/ y", "https://a/%z"] {
      try #require(replacement.utf8.count == 12)
      var bytes = good
      bytes.replaceSubrange(at..<at + 12, with: Array(replacement.utf8))
      do {
        let items = try ItemCodec.decode(bytes)
        Issue.record("\(replacement) decoded as \(items)")
      } catch {
        #expect(error.code == .invalidValue, "\(error)")
        #expect(error.description.contains("URL"), "\(error)")
      }
    }
  }

  @Test func bigEndianMessagesAreRead() throws {
    // The same one-item message, byte-swapped by hand where the wire format has integers.
    let little = try ItemCodec.encode([ExtensionItem(attributedTitle: "Hi")])
    var big = little
    big[0] = UInt8(ascii: "B")
    for offset in [4, 8, 12, 20, 52, 84, 160, 164, 168, 176, 184, 192, 200, 208, 216] {
      big[offset..<offset + 4].reverse()
    }
    #expect(try ItemCodec.decode(big) == [ExtensionItem(attributedTitle: "Hi")])
  }
}

/// Bytes from hex digits, ignoring white space.
func bytes(_ hex: String) -> [UInt8] {
  let digits = hex.unicodeScalars.filter { !$0.properties.isWhitespace }.map { Character($0) }
  return stride(from: 0, to: digits.count, by: 2).map {
    UInt8(String(digits[$0...$0 + 1]), radix: 16)!
  }
}
