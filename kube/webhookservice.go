package kube

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// WebhookServiceOf returns the Service that client names, in front of the
// pods selector selects, sending its port (443 when client's is 0) to
// their targetPort, a container port's name such as "webhooks" or its
// number. It publishes not-ready addresses: a pod stays not ready until
// its Controllers' caches sync, which needs the conversion webhook when
// the resource is stored in another version than they read, so the API
// server must reach a pod's webhooks before the pod is ready
// (docs/kubernetes.md, "Readiness and the Service"). Its apiVersion and
// kind are set, so its YAML applies as it is.
//
// It fails with one error naming every mistake: a client that names a URL
// rather than a Service, a mistake in client, no selector or a label
// that isn't one, and a targetPort that is neither a port name nor a
// port number.
func WebhookServiceOf(client WebhookClient, selector map[string]string, targetPort intstr.IntOrString) (*corev1.Service, error) {
	var errs []error
	if client.Service == nil && client.URL != "" {
		errs = append(errs, fmt.Errorf("kube: the WebhookClient names the URL %q: a Service is made only for a client that names one", client.URL))
	} else {
		for _, err := range client.mistakes("WebhookClient") {
			errs = append(errs, fmt.Errorf("kube: %w", err))
		}
	}
	if len(selector) == 0 {
		errs = append(errs, errors.New("kube: the webhook Service's selector is empty: name the labels of the pods that serve the webhooks"))
	}
	for k, v := range selector {
		if p := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(p) > 0 {
			errs = append(errs, fmt.Errorf("kube: the webhook Service's selector %s=%s: %s", k, v, strings.Join(p, "; ")))
		}
	}
	if p := targetPortMistakes(targetPort); len(p) > 0 {
		errs = append(errs, fmt.Errorf("kube: the webhook Service's targetPort %s: %s", targetPort.String(), strings.Join(p, "; ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := client.Service
	port := s.Port
	if port == 0 {
		port = 443
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
		Spec: corev1.ServiceSpec{
			Selector:                 selector,
			Ports:                    []corev1.ServicePort{{Name: "webhooks", Port: port, TargetPort: targetPort}},
			PublishNotReadyAddresses: true,
		},
	}, nil
}

// targetPortMistakes returns what is wrong with a Service's targetPort.
func targetPortMistakes(p intstr.IntOrString) []string {
	if p.Type == intstr.String {
		return validation.IsValidPortName(p.StrVal)
	}
	return validation.IsValidPortNum(int(p.IntVal))
}
