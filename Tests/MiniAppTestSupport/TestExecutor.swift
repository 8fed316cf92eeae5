public import MiniAppCore

/// The executor of the tests that make an installer, a cache view, a platform or a store without a
/// runtime: one for the whole test process, as a host has one, never shut down (the process ends).
public let testExecutor = BlockingExecutor()
