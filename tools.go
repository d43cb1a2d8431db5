//go:build tools

// Package main pins the modules the design names until code imports them all.
package main

import (
	_ "github.com/labstack/echo/v4"
	_ "github.com/larksuite/oapi-sdk-go/v3"
	_ "github.com/larksuite/oapi-sdk-go/v3/ws"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/socketmode"
	_ "gorm.io/driver/postgres"
	_ "gorm.io/driver/sqlite"
	_ "gorm.io/gorm"
)
