<?php

frankenphp_handle_request(function () {});
