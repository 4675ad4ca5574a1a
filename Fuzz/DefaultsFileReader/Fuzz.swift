/// Feeds arbitrary bytes to the shared-defaults file reader.
///
/// Reading must never crash; a file that reads must re-encode and read back equal.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  if let values = try? DefaultsFile.decode(bytes) {
    let again = try? DefaultsFile.decode(DefaultsFile.encode(values))
    precondition(again == values, "defaults round trip changed the values")
  }
  return 0
}
