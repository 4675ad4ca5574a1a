import Notify
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

// The functions of notify_private.h (notify_private(3)).

/// `NOTIFY_OPT_ENABLE` and `NOTIFY_OPT_DISABLE`; the other options change nothing.
private let optionEnable: UInt32 = 0x0400_0000
private let optionDisable: UInt32 = 0x0800_0000

@_cdecl("notify_set_options")
public func notifySetOptions(_ options: UInt32) {
  // As on Darwin: while disabled only ENABLE matters.
  if NotifyProcess.isDisabled {
    if options & optionEnable != 0 { NotifyProcess.enable() }
  } else if options & optionDisable != 0 {
    NotifyProcess.disable()
  }
}

@_cdecl("notify_register_plain")
public func notifyRegisterPlain(
  _ name: UnsafePointer<CChar>?, _ outToken: UnsafeMutablePointer<Int32>?
) -> UInt32 {
  let status = notifyRegisterCheck(name, outToken)
  if status == CStatus.ok.rawValue, let token = outToken?.pointee {
    CLibrary.shared.plainTokens.withLock { _ = $0.insert(token) }
  }
  return status
}

@_cdecl("notify_peek")
public func notifyPeek(_ token: Int32, _ value: UnsafeMutablePointer<UInt32>?) -> UInt32 {
  guard let value else { return CStatus.nullInput.rawValue }
  let isPlain = CLibrary.shared.plainTokens.withLock { $0.contains(token) }
  let result = CLibrary.shared.existingCenter().flatMap { center -> Result<UInt32, CStatus> in
    let token = NotifyToken(rawValue: token)
    do throws(NotifyError) {
      // Darwin peeks at shared-memory (check) and self. registrations only.
      let counter = try center.peek(token)
      let isLocal = try center.name(of: token)?.isProcessLocal ?? false
      let isCheck = try center.deliveryType(of: token) == "check"
      guard isLocal || (isCheck && !isPlain) else {
        return .failure(.invalidRequest)
      }
      return .success(counter)
    } catch {
      return .failure(CStatus(error))
    }
  }
  if case .success(let counter) = result { value.pointee = counter }
  return result.map { _ in () }.status
}

@_cdecl("notify_monitor_file")
public func notifyMonitorFile(
  _ token: Int32, _ path: UnsafeMutablePointer<CChar>?, _ flags: CInt
) -> UInt32 {
  guard let path else { return CStatus.invalidRequest.rawValue }
  let text = String(cString: path)
  return CLibrary.shared.existingCenter().flatMap { center in
    Result { () throws(NotifyError) in
      try center.monitorFile(text, for: NotifyToken(rawValue: token))
    }.mapError(CStatus.init)
  }.status
}

@_cdecl("notify_dump_status")
public func notifyDumpStatus(_ path: UnsafePointer<CChar>?) -> UInt32 {
  guard let path else { return CStatus.nullInput.rawValue }
  let file = String(cString: path)
  return CLibrary.shared.center().flatMap { center -> Result<Void, CStatus> in
    let report = waitFor { () async throws(NotifyError) -> String in await center.statusReport() }
    guard case .success(let text) = report else { return .failure(.failed) }
    do {
      let output = try FileDescriptor<FileSystemError>.openOutputFile(file)
      try output.writeAll(Array((text + CLibrary.shared.orderingReport).utf8))
      return .success(())
    } catch {
      return .failure(.failed)
    }
  }.status
}

@_cdecl("notify_simple_post")
public func notifySimplePost(_ name: UnsafePointer<CChar>?) -> UInt32 {
  notifyPost(name)
}
