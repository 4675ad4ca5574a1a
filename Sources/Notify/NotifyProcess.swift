import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Process-wide switches of the notify layer: `fork()` and ``disable()``, as on Darwin.
///
/// - **fork**: a child of `fork()` inherits its parent's centers, but not the threads that
///   serve their connections, and it shares their sockets with the parent. Darwin disables
///   notify in such a child; so does NotifyBus: every call on a center made before the fork
///   throws ``NotifyStatus/optionDisabled`` (status 8) in the child, its tokens are no longer
///   valid, and nothing the child does touches the parent's connection, so the parent keeps
///   working. (Darwin still serves `self.` names in the child; NotifyBus does not, because
///   those registrations live in the inherited center.) After `exec` the new program starts
///   afresh.
/// - **disable**: ``disable()`` makes every center refuse work with status 8 until
///   ``enable()``, as `notify_set_options(NOTIFY_OPT_DISABLE)` and `NOTIFY_OPT_ENABLE` do.
///   Registrations are kept; posts that arrive meanwhile are still recorded.
public enum NotifyProcess {
  /// How many times a `fork()` child has started in this address space's history.
  private static let forks = Atomic<UInt32>(0)
  private static let disabled = Atomic<Bool>(false)

  /// Installs the `fork()` handler once, on first use.
  private static let installed: Bool = {
    pthread_atfork(nil, nil, { NotifyProcess.forkedChild() })
    return true
  }()

  private static func forkedChild() {
    forks.add(1, ordering: .relaxed)
  }

  /// The current fork generation; a center remembers it when it is made.
  static var generation: UInt32 {
    _ = installed
    return forks.load(ordering: .relaxed)
  }

  /// Whether ``disable()`` is in force.
  public static var isDisabled: Bool { disabled.load(ordering: .relaxed) }

  /// Makes every notify call of this process fail with ``NotifyStatus/optionDisabled`` until
  /// ``enable()``.
  public static func disable() { disabled.store(true, ordering: .relaxed) }

  /// Undoes ``disable()``.
  ///
  /// It does not re-enable centers inherited across `fork()`.
  public static func enable() { disabled.store(false, ordering: .relaxed) }
}

extension NotifyCenter {
  /// Whether this center may be used now: not inherited across `fork()`, and not disabled.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/optionDisabled`` saying which.
  public func checkUsable() throws(NotifyError) {
    if NotifyProcess.generation != forkGeneration {
      throw NotifyError(
        .optionDisabled,
        "this process is a fork() child of the process that made this notify center; "
          + "notify is disabled in the child, as on Darwin")
    }
    if NotifyProcess.isDisabled {
      throw NotifyError(.optionDisabled, "notify is disabled (NotifyProcess.disable())")
    }
  }

  /// Whether the center was made in this process, not inherited across `fork()`.
  public var isInherited: Bool { NotifyProcess.generation != forkGeneration }
}
