package import SystemSupport

/// SystemSupport's directory, throwing ``ContainerError``.
typealias Directory = SystemSupport.Directory<ContainerError>
/// SystemSupport's file descriptor, throwing ``ContainerError``.
typealias FileDescriptor = SystemSupport.FileDescriptor<ContainerError>
/// SystemSupport's directory lister, throwing ``ContainerError``.
typealias DirectoryLister = SystemSupport.DirectoryLister<ContainerError>

extension ContainerError: FileSystemFailure {
  /// The container error for a failed file-system operation, with a fitting code.
  package init(fileSystem error: FileSystemError) {
    let sentence = error.description.prefix(1).uppercased() + error.description.dropFirst()
    switch error.problem {
    case .systemCall(let call, let code):
      self = .syscall(call, errno: code.rawValue, path: error.path, doing: error.action)
    case .tooLarge(let limit):
      self = .corrupt(error.path, "the file is larger than the limit of \(limit) bytes")
    case .wrongType:
      self.init(code: .wrongFileType, path: error.path, message: sentence + ".")
    case .foreignOwner:
      self.init(
        code: .untrustedOwner, path: error.path,
        message: sentence + ". Remove it or change its owner.")
    case .writableByOthers:
      self.init(
        code: .insecurePermissions, path: error.path,
        message: sentence + ". Run 'chmod go-w' on it.")
    case .invalidPath:
      self.init(code: .invalidPath, path: error.path, message: sentence + ".")
    }
  }
}
