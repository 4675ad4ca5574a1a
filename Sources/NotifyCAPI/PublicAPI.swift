import Notify
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

// The functions of notify.h, with Darwin's statuses (Protocol/c-api.md, notify(3)).

@_cdecl("notify_post")
public func notifyPost(_ name: UnsafePointer<CChar>?) -> UInt32 {
  let library = CLibrary.shared
  return notifyName(name).flatMap { name in
    library.center(.posting).flatMap { center in
      Result { () throws(NotifyError) in
        try center.post(name)
        // A `self.` post is delivered in this process as it is made: no fence to wait for.
        if !name.isProcessLocal { library.posted() }
      }.mapError(CStatus.init)
    }
  }.status
}

/// Registers through `body` once the name, the token pointer and the library are usable.
private func registration<T: Sendable>(
  _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int32>?,
  _ body: @escaping @Sendable (NotifyCenter, NotifyName) async throws(NotifyError) -> T
) -> Result<T, CStatus> {
  notifyName(name).flatMap { name in
    guard out != nil else { return .failure(.nullInput) }
    return CLibrary.shared.center().flatMap { center in
      waitFor { () async throws(NotifyError) -> T in try await body(center, name) }
        .mapError(CStatus.init)
    }
  }
}

/// Registers through `body` and stores the token.
private func register(
  _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int32>?,
  _ body: @escaping @Sendable (NotifyCenter, NotifyName) async throws(NotifyError) -> NotifyToken
) -> UInt32 {
  let result = registration(name, out, body)
  guard let out else { return result.status }
  return store(result, in: out)
}

@_cdecl("notify_register_check")
public func notifyRegisterCheck(
  _ name: UnsafePointer<CChar>?, _ outToken: UnsafeMutablePointer<Int32>?
) -> UInt32 {
  register(name, outToken) { center, name async throws(NotifyError) in
    try await center.registerCheck(name)
  }
}

@_cdecl("notify_register_dispatch")
public func notifyRegisterDispatch(
  _ name: UnsafePointer<CChar>?, _ outToken: UnsafeMutablePointer<Int32>?,
  _ queue: OpaquePointer?, _ handler: (@convention(block) (Int32) -> Void)?
) -> UInt32 {
  guard let queue, let handler else {
    outToken?.pointee = -1
    return CStatus.nullInput.rawValue
  }
  let forwarder = DispatchHandler(queue: queue, block: handler)
  return register(name, outToken) { center, name async throws(NotifyError) in
    forwarder.attach(to: center)
    // Called where the post is recorded; the block runs on the caller's queue.
    let token = try await center.register(name, immediate: { forwarder.forward($0) })
    CLibrary.shared.adopt(forwarder, token: token, center: center)
    return token
  }
}

@_cdecl("notify_register_signal")
public func notifyRegisterSignal(
  _ name: UnsafePointer<CChar>?, _ signal: CInt, _ outToken: UnsafeMutablePointer<Int32>?
) -> UInt32 {
  register(name, outToken) { center, name async throws(NotifyError) in
    try await center.registerSignal(name, signal: signal)
  }
}

@_cdecl("notify_register_mach_port")
public func notifyRegisterMachPort(
  _ name: UnsafePointer<CChar>?, _ port: UnsafeMutablePointer<UInt32>?, _ flags: CInt,
  _ outToken: UnsafeMutablePointer<Int32>?
) -> UInt32 {
  // There are no Mach ports on Linux: the call is checked as Darwin checks it, then
  // refused with NOTIFY_STATUS_INVALID_PORT (notify(3)).
  outToken?.pointee = -1
  if case .failure(let status) = notifyName(name) { return status.rawValue }
  guard let port else { return CStatus.invalidPort.rawValue }
  guard outToken != nil else { return CStatus.nullInput.rawValue }
  if flags & 1 == 0 { port.pointee = 0 }
  return CStatus.invalidPort.rawValue
}

@_cdecl("notify_register_file_descriptor")
public func notifyRegisterFileDescriptor(
  _ name: UnsafePointer<CChar>?, _ notifyFD: UnsafeMutablePointer<CInt>?, _ flags: CInt,
  _ outToken: UnsafeMutablePointer<Int32>?
) -> UInt32 {
  guard let notifyFD else {
    outToken?.pointee = -1
    return CStatus.invalidFile.rawValue
  }
  let reuse: CInt? = flags & 1 != 0 ? notifyFD.pointee : nil
  let result = registration(name, outToken) { center, name async throws(NotifyError) in
    try await center.registerFileDescriptor(name, reusing: reuse)
  }
  guard let outToken else { return result.status }
  if case .success(let made) = result { notifyFD.pointee = made.fileDescriptor }
  return store(result.map(\.token), in: outToken)
}

/// Runs a token operation on the existing center.
private func withToken<T>(
  _ token: Int32, _ body: (NotifyCenter, NotifyToken) throws(NotifyError) -> T
) -> Result<T, CStatus> {
  CLibrary.shared.existingCenter().flatMap { center in
    Result { () throws(NotifyError) in try body(center, NotifyToken(rawValue: token)) }
      .mapError(CStatus.init)
  }
}

@_cdecl("notify_check")
public func notifyCheck(_ token: Int32, _ check: UnsafeMutablePointer<CInt>?) -> UInt32 {
  guard let check else { return CStatus.nullInput.rawValue }
  let result = withToken(token) { center, token throws(NotifyError) in try center.check(token) }
  if case .success(let changed) = result { check.pointee = changed ? 1 : 0 }
  return result.map { _ in () }.status
}

@_cdecl("notify_cancel")
public func notifyCancel(_ token: Int32) -> UInt32 {
  let result = withToken(token) { center, token throws(NotifyError) in
    try center.cancel(token)
    center.stopMonitoringFile(for: token)
  }
  // A refused cancel (disabled, or a fork() child) leaves the registration as it was.
  if case .success = result {
    CLibrary.shared.cancelDispatch(token)
    CLibrary.shared.plainTokens.withLock { _ = $0.remove(token) }
  }
  return result.status
}

@_cdecl("notify_suspend")
public func notifySuspend(_ token: Int32) -> UInt32 {
  withToken(token) { center, token throws(NotifyError) in try center.suspend(token) }.status
}

@_cdecl("notify_resume")
public func notifyResume(_ token: Int32) -> UInt32 {
  withToken(token) { center, token throws(NotifyError) in try center.resume(token) }.status
}

@_cdecl("notify_set_state")
public func notifySetState(_ token: Int32, _ state: UInt64) -> UInt32 {
  let result = withToken(token) { center, token throws(NotifyError) in
    _ = try center.name(of: token)
    return center
  }.flatMap { center in
    waitFor { () async throws(NotifyError) in
      try await center.setState(state, for: NotifyToken(rawValue: token))
    }.mapError(CStatus.init)
  }
  // As on Darwin, a refusal by notifyd is silent: only a failure to reach it is reported.
  if case .failure(let status) = result, status == CStatus(.notAuthorized) {
    return CStatus.ok.rawValue
  }
  return result.status
}

@_cdecl("notify_get_state")
public func notifyGetState(_ token: Int32, _ state: UnsafeMutablePointer<UInt64>?) -> UInt32 {
  guard let state else { return CStatus.nullInput.rawValue }
  let result = withToken(token) { center, token throws(NotifyError) in
    _ = try center.name(of: token)
    return center
  }.flatMap { center in
    waitFor { () async throws(NotifyError) -> UInt64 in
      try await center.state(of: NotifyToken(rawValue: token))
    }.mapError(CStatus.init)
  }
  if case .success(let value) = result { state.pointee = value }
  return result.map { _ in () }.status
}

@_cdecl("notify_is_valid_token")
public func notifyIsValidToken(_ token: Int32) -> Bool {
  guard token >= 0, case .success(let center) = CLibrary.shared.existingCenter() else {
    return false
  }
  return center.isValid(NotifyToken(rawValue: token))
}
