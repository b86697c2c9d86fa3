//! ferrophp's own PHP extension, registered at engine start-up: the place where classes
//! (such as `UserCache\Cache`) and ini entries join the engine. The module entry itself is
//! a C table in the shim; these are its lifecycle callbacks.

use std::ffi::c_int;

use php_sys as sys;

#[no_mangle]
pub extern "C" fn ferrophp_module_minit(_type: c_int, _module_number: c_int) -> sys::zend_result {
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub extern "C" fn ferrophp_module_mshutdown(
    _type: c_int,
    _module_number: c_int,
) -> sys::zend_result {
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub extern "C" fn ferrophp_module_rinit(_type: c_int, _module_number: c_int) -> sys::zend_result {
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub extern "C" fn ferrophp_module_rshutdown(
    _type: c_int,
    _module_number: c_int,
) -> sys::zend_result {
    sys::ZEND_RESULT_CODE_SUCCESS
}

#[no_mangle]
pub extern "C" fn ferrophp_module_minfo(_module: *mut sys::zend_module_entry) {}
