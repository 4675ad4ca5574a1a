extension Registry {
  /// Records a post of `name` to the one registration `token`, as a watched file does.
  ///
  /// Returns nothing to do when the registration is gone.
  mutating func post(_ name: NotifyName, toToken token: NotifyToken) -> [Action] {
    guard var registration = registrations[token] else { return [] }
    registration.postCount += 1
    let event = NotifyEvent(
      token: token, name: name, postCount: registration.postCount, sender: nil, sequence: nil,
      isResynchronization: false)
    var actions: [Action] = []
    if registration.suspendCount > 0 {
      registration.deferred = DeferredPost(event)
    } else {
      deliver(event, to: &registration, into: &actions)
    }
    registrations[token] = registration
    return actions
  }
}
