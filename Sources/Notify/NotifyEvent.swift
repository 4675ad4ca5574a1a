/// One delivery to a registration: a post of `name` (or a possible missed post after
/// the bus came back).
public struct NotifyEvent: Hashable, Sendable {
  /// The registration it was delivered to.
  public var token: NotifyToken
  /// The name that was posted.
  public var name: NotifyName
  /// How many posts reached the registration in all, this one included.
  ///
  /// Posts coalesce, so consecutive events may differ by more than one.
  public var postCount: UInt64
  /// The poster's unique bus name, when the post came over the bus.
  public var sender: String?
  /// The poster's sequence number, when the signal carried one.
  public var sequence: UInt64?
  /// The poster's count of its posts of this name, when the signal carried one.
  public var nameSequence: UInt64? = nil
  /// Whether this delivery stands for posts possibly missed: the bus was down, or it
  /// dropped signals for this receiver (a gap in a poster's ``nameSequence``).
  public var isResynchronization: Bool
}

/// A registration's deliveries as an asynchronous sequence.
///
/// Posts coalesce: when the consumer falls behind, only the newest events are kept (the
/// buffer size is chosen at registration), so memory stays bounded however fast names
/// are posted. Ending the iteration cancels the registration.
public struct NotifyEvents: AsyncSequence, Sendable {
  public typealias Element = NotifyEvent
  /// The registrations behind the sequence, one per name or namespace.
  public let tokens: [NotifyToken]

  /// The registration behind a sequence of one name or namespace.
  public var token: NotifyToken { tokens[0] }
  let stream: AsyncStream<NotifyEvent>

  public func makeAsyncIterator() -> AsyncStream<NotifyEvent>.Iterator {
    stream.makeAsyncIterator()
  }
}
