<?php

require_once __DIR__.'/_executor.php';

return function () {
    phpinfo();
};
