extension Registry {
  /// Records a post of `name` to the one registration `token`, as a watched file does.
  ///
  /// Returns nothing to do when the registration is gone.
  mutating func post(_ name: NotifyName, toToken token: NotifyToken) -> Actions {
    var actions = Actions()
    guard let index = registrations.index(forKey: token) else { return actions }
    record(at: index, into: &actions) { postCount in
      NotifyEvent(
        token: token, name: name, postCount: postCount, sender: nil, sequence: nil,
        isResynchronization: false)
    }
    return actions
  }
}
