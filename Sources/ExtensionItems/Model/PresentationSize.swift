/// A provider's estimated display size in points (`preferredPresentationSize`).
///
/// ``zero`` means unknown, as `CGSizeZero` does on Apple systems.
public struct PresentationSize: Hashable, Sendable {
  /// The width in points.
  public var width: Double
  /// The height in points.
  public var height: Double

  /// Creates a size.
  public init(width: Double, height: Double) {
    self.width = width
    self.height = height
  }

  /// The unknown size.
  public static let zero = PresentationSize(width: 0, height: 0)

  /// Whether the size is known (not ``zero``).
  public var isKnown: Bool { width != 0 || height != 0 }
}
