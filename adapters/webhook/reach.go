package webhook

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
)

// TryKey is the attribute of a retried check's record that counts the
// tries, 1 for the first.
const TryKey = attribute.Key("loam.kube.webhooks.try")

// Retrying returns what a Controller named controllerName calls for each
// first check it retries because the API server did not reach these
// webhooks' conversion: it emits a warning through logger naming the
// Controller, the webhooks' address, the try and the error, so each try
// shows in the App's records.
func (s *Service) Retrying(logger log.Logger, controllerName string) func(try int, err error) {
	return func(try int, err error) {
		var r log.Record
		r.SetTimestamp(time.Now())
		r.SetSeverity(log.SeverityWarn)
		r.SetSeverityText(log.SeverityWarn.String())
		r.SetBody(attribute.StringValue("the API server did not reach the webhooks' conversion: checking again"))
		r.AddAttributes(ControllerNameKey.String(controllerName), AddressKey.String(s.address),
			TryKey.Int(try), exceptionMessageKey.String(err.Error()))
		logger.Emit(context.Background(), r)
	}
}
