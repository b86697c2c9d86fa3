/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: ff754b9b1eef38b6f1c2f5d7afef3f357c1e7906 */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_handle_request, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, handler, IS_CALLABLE, 0)
ZEND_END_ARG_INFO()

#define arginfo_frankenphp_handle_request arginfo_ferrophp_handle_request

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_frankenphp_response_headers, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

#define arginfo_ferrophp_response_headers arginfo_frankenphp_response_headers

#define arginfo_apache_response_headers arginfo_frankenphp_response_headers

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_fastcgi_finish_request, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

#define arginfo_ferrophp_finish_request arginfo_fastcgi_finish_request

#define arginfo_frankenphp_finish_request arginfo_fastcgi_finish_request

#define arginfo_getallheaders arginfo_frankenphp_response_headers

#define arginfo_apache_request_headers arginfo_frankenphp_response_headers

#define arginfo_frankenphp_request_headers arginfo_frankenphp_response_headers

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_headers_send, 0, 0, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, status, IS_LONG, 0, "200")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_frankenphp_log, 0, 1, IS_VOID, 0)
	ZEND_ARG_TYPE_INFO(0, message, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, level, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, context, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ferrophp_request_heartbeat, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, seconds, IS_LONG, 0)
ZEND_END_ARG_INFO()


ZEND_FUNCTION(ferrophp_handle_request);
ZEND_FUNCTION(frankenphp_response_headers);
ZEND_FUNCTION(ferrophp_finish_request);
ZEND_FUNCTION(frankenphp_request_headers);
ZEND_FUNCTION(headers_send);
ZEND_FUNCTION(frankenphp_log);
ZEND_FUNCTION(ferrophp_request_heartbeat);


static const zend_function_entry ext_functions[] = {
	ZEND_FE(ferrophp_handle_request, arginfo_ferrophp_handle_request)
	ZEND_FALIAS(frankenphp_handle_request, ferrophp_handle_request, arginfo_frankenphp_handle_request)
	ZEND_FE(frankenphp_response_headers, arginfo_frankenphp_response_headers)
	ZEND_FALIAS(ferrophp_response_headers, frankenphp_response_headers, arginfo_ferrophp_response_headers)
	ZEND_FALIAS(apache_response_headers, frankenphp_response_headers, arginfo_apache_response_headers)
	ZEND_FALIAS(fastcgi_finish_request, ferrophp_finish_request, arginfo_fastcgi_finish_request)
	ZEND_FE(ferrophp_finish_request, arginfo_ferrophp_finish_request)
	ZEND_FALIAS(frankenphp_finish_request, ferrophp_finish_request, arginfo_frankenphp_finish_request)
	ZEND_FALIAS(getallheaders, frankenphp_request_headers, arginfo_getallheaders)
	ZEND_FALIAS(apache_request_headers, frankenphp_request_headers, arginfo_apache_request_headers)
	ZEND_FE(frankenphp_request_headers, arginfo_frankenphp_request_headers)
	ZEND_FE(headers_send, arginfo_headers_send)
	ZEND_FE(frankenphp_log, arginfo_frankenphp_log)
	ZEND_FE(ferrophp_request_heartbeat, arginfo_ferrophp_request_heartbeat)
	ZEND_FE_END
};

static void register_sapi_symbols(int module_number)
{
	REGISTER_LONG_CONSTANT("FRANKENPHP_LOG_LEVEL_DEBUG", -4, CONST_PERSISTENT);
	REGISTER_LONG_CONSTANT("FRANKENPHP_LOG_LEVEL_INFO", 0, CONST_PERSISTENT);
	REGISTER_LONG_CONSTANT("FRANKENPHP_LOG_LEVEL_WARN", 4, CONST_PERSISTENT);
	REGISTER_LONG_CONSTANT("FRANKENPHP_LOG_LEVEL_ERROR", 8, CONST_PERSISTENT);
}
