import Foundation
import Testing

@testable import ExtensionItems

struct InternetDateTimeTests {
  @Test(arguments: [
    ("1970-01-01T00:00:00.000Z", 0.0),
    ("2001-01-01T00:00:00.250Z", 978_307_200.25),
    ("1969-12-31T23:59:59.999Z", -0.001),
    ("2000-02-29T12:00:00.000Z", 951_825_600.0),
    ("0001-01-01T00:00:00.000Z", -62_135_596_800.0),
    ("9999-12-31T23:59:59.999Z", 253_402_300_799.999),
  ])
  func formatsAndParsesUTCWithMilliseconds(_ text: String, _ seconds: Double) throws {
    let date = Date(timeIntervalSince1970: seconds)
    #expect(InternetDateTime.format(date) == text)
    let parsed = try #require(InternetDateTime.parse(text))
    #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.000_5)
  }

  /// Foundation (ICU) switches to the Julian calendar before 1582-10-15; RFC 3339 and this
  /// reader use the proleptic Gregorian calendar throughout, so they agree from 1583 on.
  @Test func agreesWithFoundationFrom1583On() throws {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    for _ in 0..<2_000 {
      let milliseconds = Int64.random(in: -12_212_553_600_000...253_402_300_799_999)
      let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
      let ours = try #require(InternetDateTime.format(date))
      #expect(ours == formatter.string(from: date))
      let parsed = try #require(InternetDateTime.parse(ours))
      let theirs = try #require(formatter.date(from: ours))
      #expect(abs(parsed.timeIntervalSince(theirs)) < 0.000_001, "\(ours)")
    }
  }

  @Test func readsOffsetsLowercaseAndLongFractions() throws {
    let utc = try #require(InternetDateTime.parse("2024-06-01T12:00:00Z"))
    #expect(InternetDateTime.parse("2024-06-01T14:30:00+02:30") == utc)
    #expect(InternetDateTime.parse("2024-06-01t07:00:00-05:00") == utc)
    #expect(InternetDateTime.parse("2024-06-01T12:00:00z") == utc)
    // Found by Fuzz/run ItemCodec: this crashed ICU's parser inside ISO8601DateFormatter.
    let long = "1013-05-09T06:13:20." + String(repeating: "7", count: 90) + "000Z"
    let parsed = try #require(InternetDateTime.parse(long))
    #expect(InternetDateTime.format(parsed) == "1013-05-09T06:13:20.778Z")
  }

  @Test(arguments: [
    "", "2024-06-01", "2024-06-01T12:00:00", "2024-6-01T12:00:00Z", "2024-06-01 12:00:00Z",
    "2024-13-01T12:00:00Z", "2024-00-10T12:00:00Z", "2023-02-29T12:00:00Z", "1900-02-29T00:00:00Z",
    "2024-04-31T00:00:00Z", "2024-06-01T24:00:00Z", "2024-06-01T12:60:00Z",
    "2024-06-01T12:00:61Z", "2024-06-01T12:00:00.Z", "2024-06-01T12:00:00+0200",
    "2024-06-01T12:00:00+24:00", "0000-01-01T00:00:00Z", "2024-06-01T12:00:00Zjunk",
    "２０２４-06-01T12:00:00Z", "2021-01-01T12:00:60Z", "9999-12-31T23:59:60Z",
    "0001-01-01T00:00:00+01:00", "0000-06-01T00:00:00Z",
  ])
  func refusesMalformedDates(_ text: String) {
    #expect(InternetDateTime.parse(text) == nil)
  }

  @Test func leapSecondsAndYearZeroAreReadWhereTheyLandInRange() throws {
    let leap = try #require(InternetDateTime.parse("2016-12-31T23:59:60Z"))
    #expect(InternetDateTime.format(leap) == "2017-01-01T00:00:00.000Z")
    #expect(InternetDateTime.parse("2016-12-31T15:59:60-08:00") == leap)
    let yearZero = try #require(InternetDateTime.parse("0000-12-31T23:30:00-01:00"))
    #expect(InternetDateTime.format(yearZero) == "0001-01-01T00:30:00.000Z")
  }

  @Test func datesOutsideFourDigitYearsCannotBeWritten() {
    #expect(InternetDateTime.format(Date(timeIntervalSince1970: -62_135_596_801)) == nil)
    #expect(InternetDateTime.format(Date(timeIntervalSince1970: 253_402_300_800)) == nil)
    #expect(InternetDateTime.format(Date(timeIntervalSince1970: .infinity)) == nil)
    #expect(InternetDateTime.format(Date(timeIntervalSince1970: .nan)) == nil)
  }
}
