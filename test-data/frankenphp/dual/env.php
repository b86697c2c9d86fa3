<?php
// putenv()/getenv() against $_ENV and $_SERVER (TestEnv), and a configured variable
// (`-e`, FrankenPHP's "prepared env") seen by getenv(), $_SERVER and $_ENV, surviving a
// putenv() of another name (TestPreparedEnv*).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    $var = 'MY_VAR_' . ($_GET['var'] ?? '');
    $out = [];
    $out['put'] = putenv("$var=HelloWorld");
    $out['get'] = getenv($var);
    $out['in_env'] = array_key_exists($var, $_ENV);
    $out['in_server'] = array_key_exists($var, $_SERVER);
    $out['unset'] = putenv($var);
    $out['get_after_unset'] = getenv($var);
    $out['put_empty'] = putenv("$var=");
    $out['get_empty'] = getenv($var);
    $out['unset_missing'] = putenv('NON_EXISTING_VAR' . ($_GET['var'] ?? ''));
    try {
        $out['put_nul'] = putenv("INVALID\0_VAR=value");
    } catch (ValueError $e) {
        $out['put_nul'] = 'ValueError';
    }
    $out['get_nul'] = @getenv("INVALID\0_VAR");
    $out['all_is_array'] = is_array(getenv());
    // The configured variable.
    $out['prepared_before'] = getenv('PREPARED');
    putenv('PUT_HERE=put_value');
    $out['prepared_after_put'] = getenv('PREPARED');
    $out['put_here'] = getenv('PUT_HERE');
    $out['prepared_server'] = $_SERVER['PREPARED'] ?? null;
    $out['prepared_env'] = $_ENV['PREPARED'] ?? null;
    header('Content-Type: application/json');
    echo json_encode($out);
});
