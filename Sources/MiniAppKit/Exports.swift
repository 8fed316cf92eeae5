// A host imports MiniAppKit alone: the parsers' types (manifests, records, keys, errors) and the
// permission store are part of its API.
@_exported import MiniAppCore
@_exported import MiniAppPermissions
