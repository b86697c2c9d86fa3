<?php
$handler = static function (): void {
    echo 'Hello, World!';
};
while (ferrophp_handle_request($handler)) {
}
