// Filled by the config implementation (yaml-cpp).
