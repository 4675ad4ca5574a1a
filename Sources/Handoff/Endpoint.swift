import AppGroups
import DBus
import Notify

/// Opening a container and connecting a center, with errors turned into ``HandoffError``.
enum Endpoint {
  static func open(group: String, notification: String) throws(HandoffError)
    -> (GroupContainer, NotifyName)
  {
    let name: NotifyName
    do {
      name = try NotifyName(notification)
    } catch {
      throw HandoffError(.invalidName, error.message, cause: .notify(error))
    }
    do {
      return (try GroupContainer(identifier: group), name)
    } catch {
      throw HandoffError(
        .container, "Cannot open the container of \(group): \(error.message)",
        cause: .container(error))
    }
  }

  static func connect(_ bus: Bus) async throws(HandoffError) -> NotifyCenter {
    do {
      return try await NotifyCenter.connect(to: bus)
    } catch {
      throw HandoffError(.notConnected, error.message, cause: .notify(error))
    }
  }
}
