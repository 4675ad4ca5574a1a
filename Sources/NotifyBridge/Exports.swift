@_exported public import NotifyBridgeCore
