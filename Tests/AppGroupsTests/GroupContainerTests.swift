import AppGroups
import Foundation
import Glibc
import TestSupport
import Testing

struct GroupContainerTests {
  @Test func createsEveryMissingDirectoryWithMode0700() throws {
    let temporary = TemporaryDirectory()
    let base = temporary.path + "/a/b/groups"
    let container = try GroupContainer(
      identifier: GroupIdentifier(validating: "group.com.example.modes"), groupsDirectory: base)
    #expect(container.path == base + "/group.com.example.modes")
    for path in [temporary.path + "/a", temporary.path + "/a/b", base, container.path] {
      #expect(mode(of: path) == 0o700, "\(path)")
    }
    // Opening again finds the same container.
    let again = try GroupContainer(
      identifier: GroupIdentifier(validating: "group.com.example.modes"), groupsDirectory: base)
    #expect(again.url == container.url)
  }

  @Test func resolvesTheLocationFromTheEnvironment() throws {
    #expect(
      try GroupContainer.groupsDirectory(environment: [
        "NOTIFYBUS_GROUPS_DIR": "/x/groups", "XDG_DATA_HOME": "/d", "HOME": "/h",
      ]) == "/x/groups")
    #expect(
      try GroupContainer.groupsDirectory(environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"])
        == "/d/notifybus/groups")
    #expect(
      try GroupContainer.groupsDirectory(environment: ["XDG_DATA_HOME": "rel", "HOME": "/h"])
        == "/h/.local/share/notifybus/groups")
    #expect(
      try GroupContainer.groupsDirectory(environment: ["NOTIFYBUS_GROUPS_DIR": "", "HOME": "/h"])
        == "/h/.local/share/notifybus/groups")
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer.groupsDirectory(environment: ["NOTIFYBUS_GROUPS_DIR": "relative/dir"])
    }
    #expect(error?.code == .invalidPath)
  }

  @Test func usesNotifyBusGroupsDirWhenSet() throws {
    let temporary = TemporaryDirectory()
    let container = try GroupContainer(
      identifier: GroupIdentifier(validating: "group.com.example.env"),
      environment: ["NOTIFYBUS_GROUPS_DIR": temporary.groups, "HOME": "/nonexistent"])
    #expect(container.path == temporary.groups + "/group.com.example.env")
  }

  @Test(arguments: ["/a/../b", "/a/./b", "relative/groups", "/"])
  func refusesTraversalInTheGroupsDirectory(_ suffix: String) {
    let temporary = TemporaryDirectory()
    let base = suffix.hasPrefix("/") && suffix != "/" ? temporary.path + suffix : suffix
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer(
        identifier: GroupIdentifier(validating: "group.com.example.x"), groupsDirectory: base)
    }
    #expect(error?.code == .invalidPath)
  }

  @Test func refusesTraversalInTheIdentifier() {
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer(identifier: "group.com.example/../../etc")
    }
    #expect(error?.code == .invalidIdentifier)
  }

  @Test func refusesASymlinkedAncestor() throws {
    let temporary = TemporaryDirectory()
    try FileManager.default.createDirectory(
      atPath: temporary.path + "/real", withIntermediateDirectories: true)
    #expect(symlink(temporary.path + "/real", temporary.path + "/link") == 0)
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer(
        identifier: GroupIdentifier(validating: "group.com.example.x"),
        groupsDirectory: temporary.path + "/link/groups")
    }
    #expect(error?.code == .symbolicLink)
    #expect(error?.path == temporary.path + "/link")
    #expect(!FileManager.default.fileExists(atPath: temporary.path + "/real/groups"))
  }

  @Test func refusesASymlinkedContainer() throws {
    let temporary = TemporaryDirectory()
    let elsewhere = temporary.path + "/elsewhere"
    #expect(mkdir(elsewhere, 0o700) == 0)
    #expect(mkdir(temporary.groups, 0o700) == 0)
    #expect(symlink(elsewhere, temporary.groups + "/group.com.example.x") == 0)
    let error = #expect(throws: ContainerError.self) {
      try temporary.container("group.com.example.x")
    }
    #expect(error?.code == .symbolicLink)
    #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
  }

  @Test func refusesASymlinkedSubdirectory() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    let elsewhere = temporary.path + "/elsewhere"
    #expect(mkdir(elsewhere, 0o700) == 0)
    #expect(symlink(elsewhere, container.path + "/spool") == 0)
    let error = #expect(throws: ContainerError.self) { try Spool(container: container) }
    #expect(error?.code == .symbolicLink)
    #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
  }

  @Test func refusesAContainerWritableByOthers() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    #expect(chmod(container.path, 0o777) == 0)
    let error = #expect(throws: ContainerError.self) { try temporary.container() }
    #expect(error?.code == .insecurePermissions)
    #expect(error?.message.contains("777") == true)
  }

  @Test func refusesAnAncestorWritableByOthersWithoutStickyBit() throws {
    let temporary = TemporaryDirectory()
    #expect(mkdir(temporary.path + "/open", 0o777) == 0)
    #expect(chmod(temporary.path + "/open", 0o777) == 0)
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer(
        identifier: GroupIdentifier(validating: "group.com.example.x"),
        groupsDirectory: temporary.path + "/open/groups")
    }
    #expect(error?.code == .insecurePermissions)
  }

  @Test(.enabled(if: geteuid() == 0, "needs root to give a directory away"))
  func refusesAContainerOwnedByAnotherUser() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    #expect(chown(container.path, 65534, 65534) == 0)
    let error = #expect(throws: ContainerError.self) { try temporary.container() }
    #expect(error?.code == .untrustedOwner)
    #expect(error?.message.contains("65534") == true)
  }

  @Test(.enabled(if: geteuid() == 0, "needs root to give a directory away"))
  func refusesAnAncestorOwnedByAnotherUser() throws {
    let temporary = TemporaryDirectory()
    #expect(mkdir(temporary.path + "/theirs", 0o755) == 0)
    #expect(chown(temporary.path + "/theirs", 65534, 65534) == 0)
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer(
        identifier: GroupIdentifier(validating: "group.com.example.x"),
        groupsDirectory: temporary.path + "/theirs/groups")
    }
    #expect(error?.code == .untrustedOwner)
  }

  @Test(.enabled(if: geteuid() != 0, "root may write anywhere"))
  func failsLoudlyOnAnUnwritableContainer() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    #expect(chmod(container.path, 0o500) == 0)
    defer { chmod(container.path, 0o700) }
    let error = #expect(throws: ContainerError.self) { try temporary.container() }
    #expect(error?.code == .notWritable)
  }

  @Test func failsLoudlyWhenAComponentIsAFile() throws {
    let temporary = TemporaryDirectory()
    #expect(FileManager.default.createFile(atPath: temporary.path + "/file", contents: Data()))
    let error = #expect(throws: ContainerError.self) {
      try GroupContainer(
        identifier: GroupIdentifier(validating: "group.com.example.x"),
        groupsDirectory: temporary.path + "/file/groups")
    }
    #expect(error?.code == .wrongFileType)
  }
}
