import Foundation

/// RFC 3339 date-times (`2001-01-01T00:00:00.250Z`), the form of `$date` in the JSON
/// mapping, read and written in Swift.
///
/// Foundation's `ISO8601DateFormatter` is not used: on Linux it parses through ICU, which
/// crashes (SIGFPE) on fractional seconds of some lengths, found by `Fuzz/run ItemCodec`.
enum InternetDateTime {
  /// The date as UTC with millisecond precision, or `nil` outside years 0001 to 9999 (which
  /// includes non-finite dates).
  static func format(_ date: Date) -> String? {
    let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
    guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return nil }
    let total = Int64(milliseconds)
    let (days, dayMilliseconds) = floorDivision(total, 86_400_000)
    let (year, month, day) = civil(fromDays: days)
    guard (1...9999).contains(year) else { return nil }
    let seconds = dayMilliseconds / 1000
    return digits(year, 4) + "-" + digits(month, 2) + "-" + digits(day, 2) + "T"
      + digits(seconds / 3600, 2) + ":" + digits(seconds / 60 % 60, 2) + ":"
      + digits(seconds % 60, 2) + "." + digits(dayMilliseconds % 1000, 3) + "Z"
  }

  /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since 1970.
  private static let firstSecond: Int64 = -62_135_596_800
  private static let lastSecond: Int64 = 253_402_300_799

  /// Reads `YYYY-MM-DDTHH:MM:SS`, optional fractional seconds (digits past the ninth are
  /// checked and ignored), then `Z` or an offset `±HH:MM`; `nil` for anything else,
  /// including fields out of range such as February 30, a leap second other than at 23:59
  /// UTC, and instants outside years 0001 to 9999 UTC, which ``format(_:)`` cannot write.
  static func parse(_ text: String) -> Date? {
    var scanner = Scanner(Array(text.utf8))
    guard let year = scanner.number(4), scanner.skip("-"),
      let month = scanner.number(2), scanner.skip("-"),
      let day = scanner.number(2), scanner.skip("T") || scanner.skip("t"),
      let hour = scanner.number(2), scanner.skip(":"),
      let minute = scanner.number(2), scanner.skip(":"),
      let second = scanner.number(2)
    else { return nil }
    var nanoseconds: Int64 = 0
    if scanner.skip(".") {
      var count = 0
      while let digit = scanner.digit() {
        if count < 9 { nanoseconds = nanoseconds * 10 + digit }
        count += 1
      }
      guard count > 0 else { return nil }
      for _ in count..<max(count, 9) { nanoseconds *= 10 }
    }
    var offsetMinutes: Int64 = 0
    if !(scanner.skip("Z") || scanner.skip("z")) {
      let sign: Int64
      if scanner.skip("+") {
        sign = 1
      } else if scanner.skip("-") {
        sign = -1
      } else {
        return nil
      }
      guard let offsetHour = scanner.number(2), scanner.skip(":"),
        let offsetMinute = scanner.number(2), offsetHour < 24, offsetMinute < 60
      else { return nil }
      offsetMinutes = sign * (offsetHour * 60 + offsetMinute)
    }
    guard scanner.atEnd, (1...12).contains(month),
      (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60,
      second <= 60
    else { return nil }
    // A leap second is the 61st second of 23:59 UTC, whatever the offset.
    if second == 60 && ((hour * 60 + minute - offsetMinutes) % 1440 + 1440) % 1440 != 1439 {
      return nil
    }
    let days = days(fromYear: year, month: month, day: day)
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
    // What reads must write back: years 0001 to 9999 in UTC.
    guard (firstSecond...lastSecond).contains(seconds) else { return nil }
    return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
  }

  private struct Scanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
      guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
      index += 1
      return true
    }

    mutating func digit() -> Int64? {
      guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
      else { return nil }
      defer { index += 1 }
      return Int64(bytes[index] - UInt8(ascii: "0"))
    }

    /// Exactly `count` digits.
    mutating func number(_ count: Int) -> Int64? {
      var value: Int64 = 0
      for _ in 0..<count {
        guard let digit = digit() else { return nil }
        value = value * 10 + digit
      }
      return value
    }
  }

  private static func isLeap(_ year: Int64) -> Bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
  }

  private static func daysIn(month: Int64, year: Int64) -> Int64 {
    switch month {
    case 2: isLeap(year) ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
  private static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
    let shifted = month <= 2 ? year - 1 : year
    let era = floorDivision(shifted, 400).quotient
    let yearOfEra = shifted - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  /// The proleptic Gregorian date `days` after 1970-01-01.
  private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let shifted = days + 719_468
    let era = floorDivision(shifted, 146_097).quotient
    let dayOfEra = shifted - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }

  private static func floorDivision(_ value: Int64, _ divisor: Int64)
    -> (quotient: Int64, remainder: Int64)
  {
    let quotient = value / divisor - (value % divisor < 0 ? 1 : 0)
    return (quotient, value - quotient * divisor)
  }

  private static func digits(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }
}
